"""Fixtures for the MovieLens tests: tiny rating files in each format, and ML-100K when present."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from armlab.movielens.cache import prepare_model
from armlab.movielens.model import CompletedModel

REPO = Path(__file__).resolve().parents[2]
#: Shared MovieLens 100K ratings, outside the repository (the data may not be redistributed).
ML100K = REPO.parent / "shared" / "data" / "ml-100k" / "u.data"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Never write models to the user's real cache directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


@pytest.fixture(scope="session")
def ml100k_path() -> Path:
    """``../shared/data/ml-100k/u.data`` relative to the repository root."""
    if not ML100K.is_file():
        pytest.skip(f"MovieLens 100K ratings not found at {ML100K}")
    return ML100K


@pytest.fixture(scope="session")
def ml100k_model(ml100k_path, tmp_path_factory) -> CompletedModel:
    """ML-100K completed with the default settings (rank 5, lambda 0.1, 15 sweeps)."""
    return prepare_model(ml100k_path, cache_dir=tmp_path_factory.mktemp("ml100k-cache")).model


@pytest.fixture
def write_ratings(tmp_path) -> Callable[..., Path]:
    """``write_ratings(name, rows, sep, header=None)``: a small ratings file under tmp_path."""

    def write(name: str, rows: list[tuple], sep: str, header: str | None = None) -> Path:
        lines = [header] if header else []
        lines += [sep.join(str(v) for v in row) for row in rows]
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write
