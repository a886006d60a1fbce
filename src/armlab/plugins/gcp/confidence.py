"""The greedy-confidence-pursuit paper's confidence lower bound (eq. 3), its Beta posterior inputs, and completion times.

Bachman & Precup measure how sure a run is of its top-m set by a union bound over arms: with
posterior means ``r_j``, gap location ``g = (r_(m) + r_(m+1)) / 2`` (midpoint of the m-th and
(m+1)-th largest means), return standard deviations ``s_j = sqrt(r_j (1 - r_j))`` and ``t_j``
trials of arm j,

    rho = max(0, 1 - sum_j [1 - Phi(sqrt(t_j) |r_j - g| / s_j)])          (eq. 3)

i.e. one minus the normal-approximation probability that some arm sits on the wrong side of
``g``.  A bandit is *completed* once ``rho`` has stayed at or above a level (0.98) for the
previous ``hold`` (100) trials (docs/algorithms/greedy-confidence-pursuit.md).

Every function is vectorized over leading axes with the arms on the last axis, so ``(R, K)``
inputs give ``(R,)`` outputs (one bandit per replica) and ``(R, B, K)`` give ``(R, B)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from armlab.complexity import midpoint_gaps
from armlab.problem import Objective, Problem
from armlab.stats import ArmStats

__all__ = [
    "CompletionClock",
    "beta_posterior",
    "completion_time",
    "confidence_lower_bound",
    "confidence_of",
    "threshold_confidence_lower_bound",
]


def beta_posterior(
    successes: ArrayLike, failures: ArrayLike, prior: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and real trial count of a ``Beta(prior, prior)`` prior after the data.

    Returns ``(alpha / (alpha + beta), successes + failures)`` with ``alpha = prior +
    successes`` and ``beta = prior + failures``.  The count is the number of *real* trials
    (docs/algorithms/greedy-confidence-pursuit.md: the authors' code adds the two prior pseudo-observations; the paper, and
    we, do not).  Fractional successes (rewards in [0, 1] summed) are accepted.
    """
    successes = np.asarray(successes, dtype=np.float64)
    failures = np.asarray(failures, dtype=np.float64)
    trials = successes + failures
    return (prior + successes) / (2.0 * prior + trials), trials


def _union_bound(gaps: np.ndarray, trials: ArrayLike, sds: np.ndarray) -> np.ndarray:
    """``max(0, 1 - sum_j upper-tail(sqrt(t_j) gap_j / sd_j))`` over the last axis.

    An arm with zero standard deviation is certain (tail 0) when it has trials and a
    non-zero gap, and contributes the no-information tail 1/2 otherwise.
    """
    scaled = np.sqrt(np.asarray(trials, dtype=np.float64)) * gaps
    positive = sds > 0
    z = np.divide(scaled, sds, out=np.where(scaled > 0, np.inf, 0.0), where=positive)
    tails = special.ndtr(-z)  # 1 - Phi(z), accurate far into the tail
    return np.maximum(0.0, 1.0 - tails.sum(axis=-1))


def _return_sds(posterior_means: np.ndarray, posterior_sds: ArrayLike | None) -> np.ndarray:
    if posterior_sds is None:
        return np.sqrt(posterior_means * (1.0 - posterior_means))
    return np.broadcast_to(np.asarray(posterior_sds, dtype=np.float64), posterior_means.shape)


def confidence_lower_bound(
    posterior_means: ArrayLike,
    trials: ArrayLike,
    top_m: int,
    posterior_sds: ArrayLike | None = None,
) -> np.ndarray:
    """The greedy-confidence-pursuit paper's eq. (3): lower bound on the confidence that the top-``top_m`` set is right.

    ``posterior_means`` and ``trials`` are ``(..., K)``; ``posterior_sds`` defaults to the
    Bernoulli ``sqrt(r (1 - r))`` of eq. (3) (pass empirical standard deviations for other
    reward models).  Requires ``1 <= top_m < K`` (``ValueError`` otherwise).
    """
    means = np.asarray(posterior_means, dtype=np.float64)
    gaps = midpoint_gaps(means, top_m)
    return _union_bound(gaps, trials, _return_sds(means, posterior_sds))


def threshold_confidence_lower_bound(
    posterior_means: ArrayLike,
    trials: ArrayLike,
    threshold: float,
    posterior_sds: ArrayLike | None = None,
) -> np.ndarray:
    """Eq. (3) with the gap location fixed at ``threshold``: the confidence that every arm is
    classified on the right side of it (the thresholding analogue; not in the greedy-confidence-pursuit paper)."""
    means = np.asarray(posterior_means, dtype=np.float64)
    return _union_bound(np.abs(means - threshold), trials, _return_sds(means, posterior_sds))


def confidence_of(problem: Problem, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
    """The eq. (3) bound ``(len(rows),)`` of replicas ``rows`` from their statistics."""
    counts = stats.counts[rows].astype(np.float64)
    low, high = problem.reward_range
    if low >= 0.0 and high <= 1.0:
        successes = counts * stats.means[rows]
        means, trials = beta_posterior(successes, counts - successes)
        sds = None
    else:
        means = stats.means[rows]
        trials = np.where(counts >= 2, counts, 0.0)
        sds = np.sqrt(stats.variances(ddof=1)[rows])
    if problem.objective is Objective.THRESHOLD:
        assert problem.threshold is not None
        return threshold_confidence_lower_bound(means, trials, problem.threshold, sds)
    return confidence_lower_bound(means, trials, problem.top_m, sds)


class CompletionClock:
    """Streaming completion times: feed ``rho`` after every trial, read the times at the end.

    A unit (a replica, or a replica's bandit) completes at trial ``t`` when its ``rho`` was
    ``>= level`` at each of the trials ``t - hold, ..., t`` (``hold + 1`` consecutive
    records), the paper's "held for the previous 100 trials" (docs/algorithms/greedy-confidence-pursuit.md).  Units must be
    recorded once per trial, in order.
    """

    def __init__(self, shape: int | tuple[int, ...], level: float = 0.98, hold: int = 100) -> None:
        self.level = level
        self.hold = hold
        self.run = np.zeros(shape, dtype=np.int64)  # consecutive records >= level so far
        self.completed_at = np.full(shape, -1, dtype=np.int64)

    def record(self, rho: np.ndarray, trial: ArrayLike, rows: np.ndarray | None = None) -> None:
        """Record ``rho`` at trial count ``trial`` for ``rows`` (all units when ``None``)."""
        where = slice(None) if rows is None else rows
        run = np.where(rho >= self.level, self.run[where] + 1, 0)
        self.run[where] = run
        fresh = (self.completed_at[where] < 0) & (run > self.hold)
        self.completed_at[where] = np.where(fresh, trial, self.completed_at[where])

    @property
    def completed(self) -> np.ndarray:
        """Boolean mask of the units that have completed."""
        return self.completed_at >= 0

    def times(self, horizon: int) -> np.ndarray:
        """Completion trial per unit; units that never completed get ``horizon``."""
        return np.where(self.completed, self.completed_at, horizon)


def completion_time(rho_path: ArrayLike, level: float = 0.98, hold: int = 100) -> np.ndarray:
    """First trial ``t`` with ``rho(s) >= level`` for all ``s`` in ``[t - hold, t]``.

    ``rho_path[..., i]`` is the bound after trial ``i + 1``; the result has the leading
    shape, and is the horizon ``H = rho_path.shape[-1]`` where the level is never held
    (use :class:`CompletionClock` to tell those apart).
    """
    path = np.asarray(rho_path, dtype=np.float64)
    clock = CompletionClock(path.shape[:-1], level, hold)
    for i in range(path.shape[-1]):
        clock.record(path[..., i], i + 1)
    return clock.times(path.shape[-1])
