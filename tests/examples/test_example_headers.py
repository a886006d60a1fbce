"""The "Ours" numbers in the example headers cannot go stale.

Example configs whose headers are written by hand hold their results between two marker lines
that ``examples/headers.py`` renders from ``results/STEM.json`` next to the config (the
thresholding and cumulative-regret experiments have their own ``generate.py`` and tests).
Here every such block must equal what its results file renders, and the *check* recorded in
each results file (the config at its seed on 2 replicas, budget capped) must come out the
same when re-run: a change in any algorithm that moves a published number fails until the
results and the header are regenerated with ``python examples/headers.py --run CONFIG``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from armlab.config import validate_config
from armlab.movielens.cache import prepare_model

REPO = Path(__file__).resolve().parents[2]
ML_100K = REPO.parent / "shared" / "data" / "ml-100k"


def _headers_module():
    spec = importlib.util.spec_from_file_location("example_headers", REPO / "examples" / "headers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


headers = _headers_module()
FILES = headers.generated_files()


def test_the_hand_written_headers_are_generated():
    """Every example directory without a generate.py of its own has its numbers generated."""
    assert {path.parent.name for path in FILES} >= {"ugape", "confidence_pursuit", "heterogeneous_variances"}


@pytest.mark.parametrize("config_file", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_block_is_what_its_results_file_renders(config_file):
    results_file = headers.results_path(config_file)
    assert results_file.exists(), f"no {results_file}: run python examples/headers.py --run {config_file}"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    text = config_file.read_text(encoding="utf-8")
    assert headers.with_block(text, headers.render(config_file, results)) == text, (
        f"{config_file}'s generated block was edited or is stale: python examples/headers.py --render"
    )


def _with_shared_data(config_file: Path, tmp_path: Path):
    """The example's config; a MovieLens one reads the shared ML-100K copy (the configs name
    the repository's data/ and results/, which a checkout does not hold)."""
    config = headers.load(config_file)
    if config_file.parent.name != "movielens":
        return config
    data = config.model_dump(mode="python")
    if "ratings" in data["source"]:
        data["source"]["ratings"] = str(ML_100K / "u.data")
    if "model" in data["source"]:
        data["source"]["model"] = str(prepare_model(ML_100K / "u.data", out=tmp_path / "model.npz").path)
    return validate_config(data)


def _values(table: dict) -> dict[str, np.ndarray]:
    out = {}
    for label, entry in table["policies"].items():
        for key, value in entry.items():
            out[f"{label}.{key}"] = np.asarray(value, dtype=np.float64)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("config_file", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_recorded_check_comes_out_the_same(config_file, tmp_path):
    if config_file.parent.name == "movielens" and not ML_100K.is_dir():
        pytest.skip(f"MovieLens 100K not found at {ML_100K}")
    results = json.loads(headers.results_path(config_file).read_text(encoding="utf-8"))
    recorded = _values(results["check"]["table"])
    fresh = _values(headers.run_check(_with_shared_data(config_file, tmp_path)))
    assert fresh.keys() == recorded.keys()
    moved = [key for key in recorded if not np.allclose(fresh[key], recorded[key], rtol=1e-5, atol=1e-9, equal_nan=True)]
    assert not moved, (
        f"{config_file}: {moved} moved; if the change is intended, regenerate: python examples/headers.py --run {config_file}"
    )
