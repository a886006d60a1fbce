"""Pick each replica's movies: the movie closest to each arm's (mean, variance) target.

The heterogeneous-variance paper section 5.2 draws the targets of the synthetic bandit (section 5.1) and takes, for
arm i, the movie minimising ``(m_j - mu_i)^2 + (w_j - sigma_i^2)^2``.  The targets live on
``mu in (0, 1]``, ``sigma^2 in [0.05, 1.5]`` while movie statistics live on the 1-5 rating
scale, so taken literally the rule keeps choosing a handful of rarely rated movies whose
completed ratings extrapolate below the scale (docs/algorithms/sources.md).

Two mappings:

* ``normalized`` (armlab's choice, default): candidates are movies with at least
  ``min_ratings`` observed ratings; targets are mapped affinely onto the candidates' range,
  ``mu* = m_q01 + mu * (m_q99 - m_q01)`` and
  ``sigma2* = w_q01 + (sigma2 - 0.05) / 1.45 * (w_q99 - w_q01)`` (q01/q99: 1st/99th
  percentiles over candidates); arms are matched greedily in order i = 1..K, **without
  replacement** (a duplicated movie would create tied best arms).
* ``literal``: the paper as written: raw targets, nearest movie with replacement.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from armlab.errors import ConfigError

__all__ = ["Mapping", "SIGMA2_RANGE", "candidate_movies", "match_movies", "normalized_targets"]

Mapping = Literal["normalized", "literal"]

#: Range of the synthetic target variances: 0.1 * U(0.5, 1.5) up to (0.9 + 0.1) * 1.5.
SIGMA2_RANGE = (0.05, 1.5)

#: Replicas matched per block: bounds the ``(block, candidates)`` distance array.
_BLOCK_CELLS = 1 << 22


def candidate_movies(item_counts: np.ndarray, min_ratings: int) -> np.ndarray:
    """Dense indices of the movies with at least ``min_ratings`` observed ratings."""
    return np.flatnonzero(item_counts >= min_ratings)


def normalized_targets(
    target_means: np.ndarray, target_vars: np.ndarray, movie_means: np.ndarray, movie_vars: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Map synthetic targets affinely onto the 1st-99th percentile range of the movies."""
    m01, m99 = np.percentile(movie_means, [1, 99])
    w01, w99 = np.percentile(movie_vars, [1, 99])
    low, high = SIGMA2_RANGE
    return m01 + target_means * (m99 - m01), w01 + (target_vars - low) / (high - low) * (w99 - w01)


def match_movies(
    target_means: np.ndarray,
    target_vars: np.ndarray,
    movie_means: np.ndarray,
    movie_vars: np.ndarray,
    replace: bool,
) -> np.ndarray:
    """Index ``(R, K)`` into the movies of the nearest movie to each ``(R, K)`` target.

    Without ``replace``, arms are matched in order 0..K-1 and each takes the nearest movie
    not yet taken in its replica.  Exact ties go to the lowest movie index.  Vectorized over
    replicas (in blocks that bound memory); the loop runs over the K arms.
    """
    replicas, k = target_means.shape
    if not replace and k > movie_means.size:
        raise ConfigError(
            f"movielens: {k} arms need {k} distinct movies but only {movie_means.size} are "
            f"candidates; lower min_ratings or n_arms"
        )
    out = np.empty((replicas, k), dtype=np.int64)
    block = max(1, _BLOCK_CELLS // max(1, movie_means.size))
    for start in range(0, replicas, block):
        rows = slice(start, start + block)
        out[rows] = _greedy_nearest(target_means[rows], target_vars[rows], movie_means, movie_vars, replace)
    return out


def _greedy_nearest(
    target_means: np.ndarray, target_vars: np.ndarray, movie_means: np.ndarray, movie_vars: np.ndarray, replace: bool
) -> np.ndarray:
    replicas, k = target_means.shape
    taken = np.zeros((replicas, movie_means.size), dtype=bool)
    rows = np.arange(replicas)
    chosen = np.empty((replicas, k), dtype=np.int64)
    for arm in range(k):
        dist = (movie_means - target_means[:, arm, None]) ** 2 + (movie_vars - target_vars[:, arm, None]) ** 2
        if not replace:
            dist[taken] = np.inf
        chosen[:, arm] = np.argmin(dist, axis=1)
        taken[rows, chosen[:, arm]] = True
    return chosen
