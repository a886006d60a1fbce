"""Fixtures of the CLI tests: the example plugin package (or any package) installed as pip would."""

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
