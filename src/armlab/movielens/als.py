"""Low-rank completion of a rating matrix by alternating least squares (ALS).

Objective (weighted-lambda regularisation, Zhou et al. 2008 "ALS-WR"; the pure-exploration
armlab's choice for the heterogeneous-variance paper, which leaves ALS unspecified)::

    sum over observed (u, j) of (R_uj - p_u . q_j)^2  +  lambda * (sum_u n_u |p_u|^2 + sum_j n_j |q_j|^2)

with ``n_u`` / ``n_j`` the numbers of ratings of user u / movie j; no bias terms, no clipping.
Movie factors start ``N(0, 0.1^2)`` from the counter-based generator keyed by ``als_seed``
(a pure function of seed and movie index); each sweep solves every user's ``r x r`` normal
equations given the movies, then every movie's given the users.  A half-sweep is two sparse
products (Gram entries and right-hand sides for all rows at once) and one batched
``np.linalg.solve`` on the stacked ``(n, r, r)`` systems: no Python loop over users or movies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field
from scipy import sparse

from armlab.log import get_logger
from armlab.movielens.loader import Ratings
from armlab.plugins.interfaces import PluginParams
from armlab.random import KeyedRandom

__all__ = ["ALSFit", "ALSSettings", "INIT_SCALE", "fit_als", "rmse"]

log = get_logger(__name__)

#: Standard deviation of the initial movie factors (armlab's ``N(0, 0.1^2)``).
INIT_SCALE = 0.1


class ALSSettings(PluginParams):
    """Hyper-parameters of the completion; defaults are armlab's choice."""

    rank: int = Field(5, ge=1, le=200, description="rank of the completed matrix (the heterogeneous-variance paper: 5)")
    regularization: float = Field(
        0.1, gt=0, description="lambda of the weighted-lambda penalty lambda * (n_u |p_u|^2 + n_j |q_j|^2)"
    )
    iterations: int = Field(15, ge=1, description="ALS sweeps (users then movies)")
    als_seed: int = Field(0, ge=0, description="seed of the N(0, 0.1^2) initial movie factors")


@dataclass(frozen=True)
class ALSFit:
    """Fitted factors: ``user_factors (n_users, r)``, ``item_factors (n_items, r)``.

    ``rmse_history[s]`` is the training RMSE on the observed ratings after sweep ``s + 1``.
    """

    user_factors: np.ndarray
    item_factors: np.ndarray
    rmse_history: tuple[float, ...]

    @property
    def train_rmse(self) -> float:
        return self.rmse_history[-1]


def fit_als(ratings: Ratings, settings: ALSSettings | None = None) -> ALSFit:
    """Factorise ``ratings`` with ``settings`` (default: rank 5, lambda 0.1, 15 sweeps, seed 0)."""
    settings = settings or ALSSettings()
    rank, regularization = settings.rank, settings.regularization
    shape = (ratings.n_users, ratings.n_items)
    by_user = sparse.csr_matrix((ratings.values, (ratings.users, ratings.items)), shape=shape)
    seen = by_user.copy()
    seen.data[:] = 1.0
    by_item, seen_by_item = by_user.T.tocsr(), seen.T.tocsr()
    n_user = np.asarray(seen.sum(axis=1)).ravel()
    n_item = np.asarray(seen_by_item.sum(axis=1)).ravel()
    rng = KeyedRandom(settings.als_seed, "movielens-als", replicas=np.arange(ratings.n_items))
    items = INIT_SCALE * rng.normal(0, rank)
    history = []
    for _ in range(settings.iterations):
        users = _solve_rows(by_user, seen, items, regularization * n_user)
        items = _solve_rows(by_item, seen_by_item, users, regularization * n_item)
        history.append(rmse(ratings, users, items))
    log.info("als_fitted", users=ratings.n_users, movies=ratings.n_items, ratings=len(ratings),
             rank=rank, sweeps=settings.iterations, train_rmse=round(history[-1], 5))
    return ALSFit(user_factors=users, item_factors=items, rmse_history=tuple(history))


def _solve_rows(values: sparse.csr_matrix, seen: sparse.csr_matrix, other: np.ndarray, ridge: np.ndarray) -> np.ndarray:
    """Ridge solution of every row: ``(sum_j o_j o_j^T + ridge I) x = sum_j R_j o_j``.

    ``seen @ outer(other)`` gives all rows' Gram matrices in one sparse product.
    """
    n, rank = values.shape[0], other.shape[1]
    outer = (other[:, :, None] * other[:, None, :]).reshape(other.shape[0], rank * rank)
    gram = np.asarray(seen @ outer).reshape(n, rank, rank)
    gram[:, np.arange(rank), np.arange(rank)] += ridge[:, None]
    rhs = np.asarray(values @ other)
    return np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]


def rmse(ratings: Ratings, user_factors: np.ndarray, item_factors: np.ndarray) -> float:
    """Root mean squared error of ``p_u . q_j`` on the observed ratings."""
    predicted = np.einsum("nr,nr->n", user_factors[ratings.users], item_factors[ratings.items])
    return float(np.sqrt(np.mean((ratings.values - predicted) ** 2)))
