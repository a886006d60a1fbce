"""Fixtures of the foundation tests: installed third-party distributions, made up per test."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

#: ``install(name, version, entry_points, modules) -> directory``
Installer = Callable[..., Path]


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Installer]:
    """``fake_dist(name, version, {ep_name: ep_value}, {module: source})``: install a
    distribution with ``armlab`` entry points in a temporary directory put on ``sys.path``;
    returns the directory (the ``PYTHONPATH`` of a subprocess that should see it).

    ``importlib.metadata`` finds ``*.dist-info`` directories on any ``sys.path`` entry, so
    this is what ``pip install`` leaves behind, minus the files armlab never reads.
    """
    monkeypatch.syspath_prepend(str(tmp_path))
    written: list[str] = []

    def install(name: str, version: str, entry_points: dict[str, str], modules: dict[str, str] | None = None) -> Path:
        info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = "".join(f"{ep_name} = {value}\n" for ep_name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[armlab]\n{lines}")
        for module, source in (modules or {}).items():
            (tmp_path / f"{module}.py").write_text(source)
            written.append(module)
        importlib.invalidate_caches()
        return tmp_path

    yield install
    for module in written:
        sys.modules.pop(module, None)
