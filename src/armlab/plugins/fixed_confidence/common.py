"""Pieces shared by the (epsilon, m)-best-arm rules (UGapE, LUCB1): parameter checks, the
initial round, the m-arm sets and the arm of best bound with the rules' tie order, and answers
frozen when a stopping rule fires.  Definitions: docs/algorithms/fixed-confidence.md."""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import Policy, empirical_recommendation
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "SET_OBJECTIVES",
    "InitialRound",
    "StoppingRule",
    "argbest",
    "as_answer",
    "at_arms",
    "best_of",
    "initial_round",
    "require_top_m",
    "resolve_delta",
    "reward_span",
    "set_mask",
    "smallest_m",
    "top_m",
]

#: The objectives of (epsilon, m)-best-arm identification (best-arm is m = 1).
SET_OBJECTIVES = frozenset({Objective.BEST_ARM, Objective.TOP_M})


def require_top_m(name: str, problem: Problem) -> int:
    """``m`` of the problem, checked against ``1 <= m < K``."""
    if not 1 <= problem.top_m < problem.n_arms:
        raise ConfigError(
            f"{name}: m = {problem.top_m} must be smaller than the number of arms "
            f"K = {problem.n_arms} (the complement of the top-m set must not be empty); "
            f"lower [problem] m or add arms"
        )
    return problem.top_m


def reward_span(name: str, problem: Problem, b: float | None) -> float:
    """The range ``b`` of rewards in ``[0, b]``: the parameter, or the source's range width."""
    if b is not None:
        return b
    low, high = problem.reward_range
    span = high - low
    if not math.isfinite(span):
        raise ConfigError(
            f"{name}: the widths assume rewards in a bounded range [0, b], but source "
            f"{problem.source!r} produces rewards in [{low}, {high}]; set the policy "
            f"parameter b (e.g. b = 1) to the range you want to assume"
        )
    return span


def resolve_delta(name: str, problem: Problem, delta: float | None) -> float:
    """The confidence parameter: the policy's own ``delta``, else ``[problem] delta``."""
    value = delta if delta is not None else problem.delta
    if value is None:
        raise ConfigError(
            f"{name}: a fixed-confidence rule needs delta; set [problem] delta = 0.05 "
            f"(or the policy parameter delta)"
        )
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{name}: delta = {value} must lie strictly between 0 and 1")
    return value


def top_m(values: np.ndarray, m: int) -> np.ndarray:
    """Ids ``(R, m)`` of the ``m`` largest values of each row, ascending (exact ties: the lower
    index, as the first ``m`` of a stable sort)."""
    if m == 1:
        return np.argmax(values, axis=1)[:, None]
    k = values.shape[1]
    mth = np.partition(values, k - m, axis=1)[:, k - m, None]  # the m-th largest value
    above = values > mth
    tied = values == mth
    # the arms tied at the m-th largest value take the places left, lowest index first
    chosen = above | (tied & (np.cumsum(tied, axis=1) <= m - above.sum(axis=1, keepdims=True)))
    return np.nonzero(chosen)[1].reshape(-1, m)


def smallest_m(values: np.ndarray, m: int) -> np.ndarray:
    """Boolean ``(R, K)`` mask of the ``m`` smallest values per row (ties: lower index)."""
    return set_mask(top_m(-values, m), values.shape[1])


def at_arms(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``values[r, ids[r]]`` for every row ``r``: the values ``(R, s)`` of the arms ``ids``."""
    n, k = values.shape
    return values.reshape(-1).take(ids + np.arange(0, n * k, k)[:, None])


def set_mask(ids: np.ndarray, n_arms: int) -> np.ndarray:
    """Boolean ``(R, K)`` mask with ``True`` at the arms ``ids`` ``(R, s)`` of each row."""
    mask = np.zeros((ids.shape[0], n_arms), dtype=bool)
    mask.reshape(-1)[ids + np.arange(0, mask.size, n_arms)[:, None]] = True
    return mask


def argbest(
    bound: np.ndarray, among: np.ndarray, largest: bool, tiebreak: np.ndarray | None = None
) -> np.ndarray:
    """Per row, the arm of ``among`` (a mask, some arm in every row) with the largest (or
    smallest) ``bound``; exact ties go to the larger ``tiebreak`` (if given), then to the lower
    index."""
    if largest:
        masked = np.where(among, bound, -np.inf)
        best = np.argmax(masked, axis=1)
    else:
        masked = np.where(among, bound, np.inf)
        best = np.argmin(masked, axis=1)
    if tiebreak is None:
        return best
    tied = masked == at_arms(masked, best[:, None])
    return np.argmax(np.where(tied, tiebreak, -np.inf), axis=1)


def best_of(
    ids: np.ndarray, values: np.ndarray, largest: bool, tiebreak: np.ndarray | None = None
) -> np.ndarray:
    """:func:`argbest` among the arms ``ids`` ``(R, s)`` of each row (ascending, as
    :func:`top_m` gives them), given their ``values`` (and ``tiebreak``) ``(R, s)``: the arm of
    largest (or smallest) value, exact ties to the larger ``tiebreak``, then to the lower index."""
    best = np.argmax(values, axis=1) if largest else np.argmin(values, axis=1)  # first of the ties
    if tiebreak is not None:
        tied = values == at_arms(values, best[:, None])
        best = np.argmax(np.where(tied, tiebreak, -np.inf), axis=1)
    return at_arms(ids, best[:, None])[:, 0]


def as_answer(problem: Problem, chosen: np.ndarray) -> np.ndarray:
    """A set mask ``(R, K)`` as a recommendation: the mask (top-m) or its arm (best-arm)."""
    if problem.objective is Objective.TOP_M:
        return chosen
    return np.argmax(chosen, axis=1)


def initial_round(stats: ArmStats) -> tuple[np.ndarray, np.ndarray]:
    """``(initialising, arm)``: the replicas where some arm has no observed reward yet, and the
    arm each replica pulls meanwhile, the one with the fewest pulls (observed + pending,
    lowest index first).

    Pending pulls count, so the initial round pulls each arm once; with delayed feedback the
    round robin goes on until every arm has an observation, since the rules' bounds are
    defined only then.
    """
    return (stats.counts == 0).any(axis=1), np.argmin(stats.pulls, axis=1)


class InitialRound:
    """:func:`initial_round` for a whole run: which replicas are past it, and the arms of the
    others.  Once every arm of every replica has an observation the check is skipped
    (:meth:`~armlab.plugins._fast.warm_arms.WarmArms.all_warm`, the index policies' warm-up
    test)."""

    def __init__(self, replicas: int) -> None:
        self._all_rows = np.arange(replicas)
        self._over = WarmArms(need=1)

    def split(self, stats: ArmStats) -> tuple[np.ndarray, np.ndarray]:
        """``(ready, arms)``: the replicas with every arm observed (ascending), and ``arms``
        ``(R,)`` with the initial round's arm of every other replica (0 for ``ready``)."""
        if self._over.all_warm(stats):
            return self._all_rows, np.zeros(self._all_rows.size, dtype=np.int64)
        initialising, arms = initial_round(stats)
        return np.flatnonzero(~initialising), np.where(initialising, arms, 0)

    def past(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        """The replicas of ``rows`` with every arm observed, ascending."""
        if self._over.all_warm(stats):
            return np.sort(rows)
        return np.sort(rows[(stats.counts[rows] > 0).all(axis=1)])


class StoppingRule(Policy):
    """A fixed-confidence rule: once confident, a replica returns STOPPED and its answer is
    frozen at the set it was confident about (results still in flight do not change it).

    Subclasses call :meth:`freeze` when their stopping condition holds and implement
    :meth:`anytime_set`, the answer of a replica that has not stopped.
    """

    stopping_rule = True
    objectives = SET_OBJECTIVES

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.confident = np.zeros(replicas, dtype=bool)
        self.final_set = np.zeros((replicas, problem.n_arms), dtype=bool)

    def freeze(self, rows: np.ndarray, chosen: np.ndarray) -> None:
        """Mark ``rows`` confident with answer sets ``chosen`` ``(len(rows), K)``."""
        self.confident[rows] = True
        self.final_set[rows] = chosen

    @abstractmethod
    def anytime_set(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        """Answer set ``(len(rows), K)`` of replicas ``rows``, all arms observed."""

    def recommend(self, stats: ArmStats) -> np.ndarray:
        chosen = np.zeros(stats.counts.shape, dtype=bool)
        chosen[self.confident] = self.final_set[self.confident]
        ready = np.flatnonzero(~self.confident & (stats.counts > 0).all(axis=1))
        if ready.size:
            chosen[ready] = self.anytime_set(stats, ready)
        answer = as_answer(self.problem, chosen)
        unready = ~self.confident & (stats.counts == 0).any(axis=1)
        if not unready.any():
            return answer
        fallback = empirical_recommendation(self.problem, stats)
        if answer.ndim == 1:
            return np.where(unready, fallback, answer)
        return np.where(unready[:, None], fallback, answer)
