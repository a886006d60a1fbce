"""The completed rating matrix, kept as its factors: ``M = P Q^T`` is never built unless asked.

A :class:`CompletedModel` answers what the replay needs: the rating of user u for movie j,
and each movie's mean and variance over all users (the exact moments of the reward a
uniformly random user gives, computed from the factors in ``O((n_users + n_items) r^2)``).
Models are saved as ``.npz`` files (numpy arrays plus a JSON ``info`` record, no pickles).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from armlab.errors import ArmlabError
from armlab.movielens.als import ALSSettings, fit_als
from armlab.movielens.loader import Ratings

__all__ = ["MODEL_VERSION", "CompletedModel", "ModelFileError", "complete", "load_model", "save_model"]

#: Bumped whenever the fitting procedure or the file layout changes (invalidates caches).
MODEL_VERSION = 1

_ARRAYS = ("user_factors", "item_factors", "user_ids", "item_ids", "item_counts")


class ModelFileError(ArmlabError, ValueError):
    """A model file is missing, unreadable or not an armlab MovieLens model."""


@dataclass(frozen=True, eq=False)
class CompletedModel:
    """Rank-r completion of a users x movies rating matrix.

    ``user_factors (n_users, r)``, ``item_factors (n_items, r)``; ``item_ids`` are the
    movie ids of the ratings file (dense index j <-> ``item_ids[j]``); ``item_counts`` the
    number of observed ratings per movie; ``info`` records how the model was made
    (ALS settings, training RMSE, source file hash).
    """

    user_factors: np.ndarray
    item_factors: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray
    item_counts: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"CompletedModel({self.n_users} users x {self.n_items} movies, rank {self.rank})"

    @property
    def n_users(self) -> int:
        return int(self.user_factors.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.item_factors.shape[0])

    @property
    def rank(self) -> int:
        return int(self.item_factors.shape[1])

    @cached_property
    def movie_means(self) -> np.ndarray:
        """``mean_u M[u, j]`` for every movie ``(n_items,)``."""
        return self.item_factors @ self.user_factors.mean(axis=0)

    @cached_property
    def movie_variances(self) -> np.ndarray:
        """``var_u M[u, j]`` over all users (population variance, ddof 0) ``(n_items,)``.

        Equals ``q_j^T C q_j`` with ``C`` the covariance of the user factors.
        """
        centred = self.user_factors - self.user_factors.mean(axis=0)
        cov = centred.T @ centred / self.n_users
        return np.maximum(np.einsum("jr,rs,js->j", self.item_factors, cov, self.item_factors), 0.0)

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """``M[users, items]`` elementwise (dense indices, broadcast shapes)."""
        return np.einsum("...r,...r->...", self.user_factors[users], self.item_factors[items])

    def completed(self) -> np.ndarray:
        """The dense ``(n_users, n_items)`` matrix (large: use only when needed)."""
        return self.user_factors @ self.item_factors.T

    def index_of(self, movie_ids: list[int] | np.ndarray) -> np.ndarray:
        """Dense indices of movie ids; :class:`KeyError` naming the ids that have no ratings."""
        ids = np.asarray(movie_ids, dtype=np.int64)
        pos = np.searchsorted(self.item_ids, ids).clip(max=self.n_items - 1)
        missing = ids[self.item_ids[pos] != ids]
        if missing.size:
            raise KeyError(f"movie ids not in the model (no ratings): {missing[:10].tolist()}")
        return pos


def complete(ratings: Ratings, settings: ALSSettings | None = None, **info: Any) -> CompletedModel:
    """Fit ALS to ``ratings`` and package the factors; extra ``info`` entries are recorded."""
    settings = settings or ALSSettings()
    fit = fit_als(ratings, settings)
    record = {
        "version": MODEL_VERSION,
        **settings.model_dump(),
        "train_rmse": fit.train_rmse,
        "n_ratings": len(ratings),
        "format": ratings.format,
        **info,
    }
    return CompletedModel(
        user_factors=fit.user_factors,
        item_factors=fit.item_factors,
        user_ids=ratings.user_ids,
        item_ids=ratings.item_ids,
        item_counts=ratings.item_counts(),
        info=record,
    )


def save_model(model: CompletedModel, path: str | Path, dense: bool = False) -> Path:
    """Write ``model`` to ``path`` (``.npz``) atomically; ``dense`` adds the completed matrix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: getattr(model, name) for name in _ARRAYS}
    if dense:
        arrays["completed"] = model.completed()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, info=np.array(json.dumps(model.info, sort_keys=True)), **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_model(path: str | Path) -> CompletedModel:
    """Read a model written by :func:`save_model` (``armlab movielens prepare``)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in _ARRAYS if name in data.files}
            info = json.loads(str(data["info"])) if "info" in data.files else None
    except (OSError, ValueError) as exc:  # no such file, not an npz, broken JSON
        raise ModelFileError(f"cannot read model file {str(path)!r}: {exc}") from None
    missing = [name for name in _ARRAYS if name not in arrays] + (["info"] if info is None else [])
    if missing or not isinstance(info, dict):
        raise ModelFileError(
            f"{path}: not an armlab MovieLens model (missing {', '.join(missing) or 'info'}); "
            f"create one with `armlab movielens prepare RATINGS_FILE --out {path}`"
        )
    if info.get("version") != MODEL_VERSION:
        raise ModelFileError(
            f"{path}: model format version {info.get('version')!r}, this armlab reads {MODEL_VERSION}; "
            f"re-create it with `armlab movielens prepare`"
        )
    users, items = arrays["user_factors"], arrays["item_factors"]
    consistent = (
        users.ndim == items.ndim == 2
        and users.shape[1] == items.shape[1]
        and arrays["user_ids"].shape == (users.shape[0],)
        and arrays["item_ids"].shape == arrays["item_counts"].shape == (items.shape[0],)
    )
    if not consistent:
        raise ModelFileError(f"{path}: the factor and id arrays do not fit together (a damaged file?)")
    return CompletedModel(**arrays, info=info)
