"""Fixtures for the MovieLens tests: tiny rating files in each format, and ML-100K when present."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from armlab.movielens.cache import prepare_model
from armlab.movielens.model import CompletedModel

REPO = Path(__file__).resolve().parents[2]
#: Where MovieLens 100K's ratings are looked for under a checkout, in order: ``data/`` as the
#: README tells a user, then the shared data folder beside the checkout (the data may not be
#: redistributed, so neither is in the repository).
ML100K_PLACES = (Path("data", "ml-100k", "u.data"), Path("..", "shared", "data", "ml-100k", "u.data"))


def locate_ml100k(root: Path) -> Path | None:
    """The first of :data:`ML100K_PLACES` under checkout ``root`` that is a file, or ``None``."""
    return next((root / place for place in ML100K_PLACES if (root / place).is_file()), None)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Never write models to the user's real cache directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


@pytest.fixture(scope="session")
def ml100k_path() -> Path:
    """MovieLens 100K's ``u.data``: under ``data/`` of the checkout, else in ``../shared``."""
    found = locate_ml100k(REPO)
    if found is None:
        pytest.skip("MovieLens 100K ratings not found at " + " or ".join(str(REPO / p) for p in ML100K_PLACES))
    return found


@pytest.fixture(scope="session")
def ml100k_locator() -> Callable[[Path], Path | None]:
    """:func:`locate_ml100k`, for the test of where the ratings are looked for."""
    return locate_ml100k


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
