"""Factorise a ratings file once: completed models are cached under a key of file and settings.

The key is the SHA-256 of the ratings file's bytes plus the loader format and the ALS
settings (and :data:`~armlab.movielens.model.MODEL_VERSION`), so editing the file, moving it,
or changing a hyper-parameter can never return a stale model.  The cache directory is
``$XDG_CACHE_HOME/armlab/movielens`` (``~/.cache/armlab/movielens`` by default) unless a
directory is given.  Cache files are written atomically, so concurrent runs are safe.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from armlab.log import get_logger
from armlab.movielens.als import ALSSettings
from armlab.movielens.loader import RatingsFileError, RatingsFormat, load_ratings
from armlab.movielens.model import MODEL_VERSION, CompletedModel, ModelFileError, complete, load_model, save_model

__all__ = ["PreparedModel", "cache_path", "default_cache_dir", "file_sha256", "prepare_model"]

log = get_logger(__name__)


@dataclass(frozen=True)
class PreparedModel:
    """A completed model, the file it lives in, and whether it came from the cache."""

    model: CompletedModel
    path: Path
    from_cache: bool


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/armlab/movielens``, or ``~/.cache/armlab/movielens``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "armlab" / "movielens"


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def cache_path(cache_dir: Path, ratings_path: Path, sha256: str, format: str, settings: ALSSettings) -> Path:
    """Where the model of these inputs is cached: ``<stem>-<file hash>-<settings hash>.npz``."""
    recipe = json.dumps({"version": MODEL_VERSION, "format": format, **settings.model_dump()}, sort_keys=True)
    recipe_hash = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    return cache_dir / f"{ratings_path.stem}-{sha256[:16]}-{recipe_hash}.npz"


def prepare_model(
    ratings_path: str | Path,
    settings: ALSSettings | None = None,
    *,
    format: RatingsFormat | str = "auto",
    cache_dir: str | Path | None = None,
    out: str | Path | None = None,
    dense: bool = False,
) -> PreparedModel:
    """Return the completed model of ``ratings_path``, factorising only on a cache miss.

    With ``out`` the model is (also) written there; ``dense`` stores the completed matrix
    in that file too.  A damaged cache entry is rebuilt.
    """
    settings = settings or ALSSettings()
    ratings_path = Path(ratings_path)
    try:
        sha = file_sha256(ratings_path)
    except OSError as exc:
        raise RatingsFileError(f"cannot read ratings file {str(ratings_path)!r}: {exc.strerror or exc}") from None
    cached = cache_path(Path(cache_dir) if cache_dir else default_cache_dir(), ratings_path, sha, format, settings)
    model = _load_cached(cached)
    hit = model is not None
    if model is None:
        model = complete(load_ratings(ratings_path, format), settings,  # type: ignore[arg-type]
                         source_sha256=sha, source_name=ratings_path.name)
        try:
            save_model(model, cached)
        except OSError as exc:
            raise ModelFileError(
                f"cannot write the model cache {str(cached.parent)!r}: {exc.strerror or exc}; give a "
                f"writable cache_dir (source parameter) or --cache-dir (armlab movielens prepare)"
            ) from None
        log.info("movielens_model_cached", path=str(cached), train_rmse=round(model.info["train_rmse"], 5))
    if out is None:
        return PreparedModel(model, cached, from_cache=hit)
    return PreparedModel(model, save_model(model, out, dense=dense), from_cache=hit)


def _load_cached(path: Path) -> CompletedModel | None:
    if not path.exists():
        return None
    try:
        return load_model(path)
    except ModelFileError as exc:
        log.warning("movielens_cache_damaged", path=str(path), error=str(exc))
        return None
