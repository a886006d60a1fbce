"""Fixtures for figures, result files, the CLI and the plugin kit."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN_PACKAGE = REPO / "examples" / "plugin_package"


def install_fake_distribution(package_dir: Path, site: Path) -> dict[str, Any]:
    """Make ``package_dir`` importable as if pip-installed: write a ``.dist-info`` with the
    entry points of its pyproject.toml into ``site``.  Put ``site`` and ``package_dir/src``
    on ``sys.path`` (or PYTHONPATH) to activate it; importlib.metadata then finds the
    distribution and pluggy its ``armlab`` entry points, without pip or a network.
    """
    project = tomllib.loads((package_dir / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist_info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n", encoding="utf-8"
    )
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
             for group, points in project.get("entry-points", {}).items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    return project


@pytest.fixture
def fake_distribution():
    """:func:`install_fake_distribution`, for tests that install a package of their own."""
    return install_fake_distribution


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """The example plugin package, installed for this module's tests (and removed after).

    Yields its ``[project]`` table plus ``pythonpath`` (for subprocesses).
    """
    site = tmp_path_factory.mktemp("site")
    project = install_fake_distribution(PLUGIN_PACKAGE, site)
    paths = [str(site), str(PLUGIN_PACKAGE / "src")]
    sys.path[:0] = paths
    try:
        yield {**project, "pythonpath": paths}
    finally:
        for path in paths:
            sys.path.remove(path)
        for name in [m for m in sys.modules if m.split(".")[0] == "armlab_epsilon_greedy"]:
            del sys.modules[name]


def _single_run(objective: str = "best-arm", checkpoints=(10, 20, 30), **policies: dict[str, Any]) -> dict[str, Any]:
    """A hand-made summary of one run; ``policies`` maps labels to their metric entries."""
    return {
        "name": "demo",
        "seed": 1,
        "replicas": 50,
        "budget": checkpoints[-1],
        "objective": objective,
        "checkpoints": list(checkpoints),
        "policies": {label: {"plugin": label, "params": {}, **entry} for label, entry in policies.items()},
        "wall_seconds": 0.1,
    }


def _sweep(parameter: str, values: list[Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A hand-made ``[sweep]`` summary with the shape of the runner's (runs kept whole)."""
    for value, run in zip(values, runs, strict=True):
        run["sweep_value"] = value
    summary = {key: runs[0][key] for key in ("name", "seed", "replicas", "objective", "checkpoints")}
    summary["budget"] = [run["budget"] for run in runs]
    summary["sweep"] = {"parameter": parameter, "values": values}
    summary["policies"] = {
        label: {"plugin": label, "params": {}} for label in runs[0]["policies"]
    }
    summary["runs"] = runs
    return summary


@pytest.fixture
def single_run():
    """``single_run(objective, checkpoints, **{label: entry})``: a one-run summary."""
    return _single_run


@pytest.fixture
def sweep_summary():
    """``sweep_summary(parameter, values, runs)``: a sweep summary around one-run summaries."""
    return _sweep
