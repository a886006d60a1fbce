"""Every example config under examples/movielens runs at a small scale and gives sane errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from armlab import run_experiment
from armlab.config import load_config, validate_config
from armlab.config_paths import resolve_path
from armlab.movielens.cache import prepare_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "movielens"
CONFIGS = sorted(EXAMPLES.glob("*.toml"))


def test_the_examples_are_all_here():
    assert [p.name for p in CONFIGS] == ["fig5_k64.toml", "fig6_k128.toml", "popular_movies.toml"]


@pytest.fixture
def small(registry, ml100k_path, tmp_path):
    """``small(path, budgets, only=None)``: the example's summary at 300 replicas and the given
    sweep values, with the registered policies (or just ``only``); a model file is prepared."""

    def run(path: Path, budgets: list[int], only: str | None = None) -> dict:
        data = load_config(path).model_dump(mode="python")
        known = {info.name for info in registry.infos("policy")}
        data["policies"] = [p for p in data["policies"] if p["plugin"] in known and only in (None, p["plugin"])]
        data["replicas"] = 300
        data["sweep"]["values"] = budgets
        if "ratings" in data["source"]:  # the configs expect data/ml-100k/ under the repository
            data["source"]["ratings"] = str(ml100k_path)
        if "model" in data["source"]:
            data["source"]["model"] = str(prepare_model(ml100k_path, out=tmp_path / "model.npz").path)
        return run_experiment(validate_config(data), registry=registry)

    return run


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.slow
def test_example_runs_every_policy_far_better_than_guessing(small, path):
    smallest = load_config(path).sweep.values[0]
    summary = small(path, [smallest])
    assert summary["budget"] == smallest and "unif" in summary["policies"]
    for label, result in summary["policies"].items():
        # guessing errs with probability 1 - 1/K >= 0.9; the replayed ratings carry signal
        assert result["error_rate"][-1] < 0.6, (label, result["error_rate"])


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.slow
def test_example_error_falls_with_the_budget(small, path):
    values = load_config(path).sweep.values
    unif = small(path, [values[0], values[2]], only="uniform")["policies"]["unif"]
    (low, high), (se_low, se_high) = unif["error_rate"], unif["error_stderr"]
    assert low - high > 2 * math.hypot(se_low, se_high), (low, high)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_example_paths_name_the_repository_data_and_results_from_any_directory(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative to the config file, not to the working directory
    config = load_config(path)
    named = config.source.params.get("ratings") or config.source.params["model"]
    repo = EXAMPLES.parents[1]
    assert Path(resolve_path(named, config.path_base)) in (repo / "data/ml-100k/u.data", repo / "results/ml100k-rank5.npz")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_example_policies_are_registered(registry, path):
    known = {info.name for info in registry.infos("policy")}
    missing = [p.plugin for p in load_config(path).policies if p.plugin not in known]
    if missing:
        pytest.skip(f"{path.name} lists policies not registered yet: {', '.join(missing)}")
