"""Pieces shared by the (epsilon, m)-best-arm rules: parameter checks, set selection with the
sheet's tie rules, the initial round, and answers frozen when a stopping rule fires."""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins.interfaces import Policy, empirical_recommendation
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "SET_OBJECTIVES",
    "StoppingRule",
    "argbest",
    "as_answer",
    "first_round",
    "require_top_m",
    "resolve_delta",
    "reward_span",
    "smallest_m",
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


def smallest_m(values: np.ndarray, m: int) -> np.ndarray:
    """Boolean ``(R, K)`` mask of the ``m`` smallest values per row (ties: lower index)."""
    order = np.argsort(values, axis=1, kind="stable")[:, :m]
    chosen = np.zeros(values.shape, dtype=bool)
    np.put_along_axis(chosen, order, True, axis=1)
    return chosen


def argbest(primary: np.ndarray, tiebreak: np.ndarray, mask: np.ndarray, largest: bool) -> np.ndarray:
    """Per row, the arm in ``mask`` with the largest (or smallest) ``primary``; exact ties go
    to the larger ``tiebreak``, then to the lower index.  Every row needs a masked arm."""
    fill = -np.inf if largest else np.inf
    masked = np.where(mask, primary, fill)
    target = masked.max(axis=1) if largest else masked.min(axis=1)
    tied = mask & (masked == target[:, None])
    return np.argmax(np.where(tied, tiebreak, -np.inf), axis=1)


def as_answer(problem: Problem, chosen: np.ndarray) -> np.ndarray:
    """A set mask ``(R, K)`` as a recommendation: the mask (top-m) or its arm (best-arm)."""
    if problem.objective is Objective.TOP_M:
        return chosen
    return np.argmax(chosen, axis=1)


def first_round(stats: ArmStats) -> tuple[np.ndarray, np.ndarray]:
    """``(initialising, arm)``: rows where some arm has no observed reward yet, and the arm
    with the fewest pulls (observed + pending, lowest index) they pull meanwhile.

    Pending pulls count, so the initial round pulls each arm once; with delayed feedback
    the round-robin continues until every arm has an observation.
    """
    initialising = (stats.counts == 0).any(axis=1)
    return initialising, np.argmin(stats.pulls, axis=1)


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
