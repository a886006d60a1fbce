"""Pieces shared by the (epsilon, m)-best-arm rules: parameter checks, set selection with the
armlab's tie rules, the initial round, and answers frozen when a stopping rule fires.

The rules run at every step for every replica, so the sets they need (the m arms with the
largest means, the m + 1 largest upper bounds, ...) are carried from step to step by
:class:`TopSet` and repaired, instead of sorted anew; answers stay exactly those of
:func:`smallest_m` and :func:`argbest`."""

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
    "FirstRound",
    "StoppingRule",
    "TopSet",
    "argbest",
    "as_answer",
    "best_of",
    "first_round",
    "require_top_m",
    "resolve_delta",
    "reward_span",
    "set_mask",
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


def best_of(ids: np.ndarray, primary: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Per column, the entry of ``ids`` with the largest ``primary``; exact ties go to the
    larger ``tiebreak``, then to the smaller id (as :func:`argbest` over the arms ``ids``).

    Arrays are ``(s, n)``: candidates down, replicas across, so the reductions run over a
    few long rows instead of many short ones.  ``primary`` may be ``-inf`` for entries out of
    the running (not all of a column).
    """
    tied = primary == primary.max(axis=0)
    if tiebreak is not None:
        ranked = np.where(tied, tiebreak, -np.inf)
        tied = ranked == ranked.max(axis=0)
    return np.where(tied, ids, np.iinfo(ids.dtype).max).min(axis=0)


def set_mask(ids: np.ndarray, n_arms: int) -> np.ndarray:
    """Boolean ``(n, K)`` mask with ``True`` at the arms ``ids`` ``(s, n)`` of each replica."""
    mask = np.zeros((ids.shape[1], n_arms), dtype=bool)
    mask.reshape(-1)[ids + np.arange(ids.shape[1]) * n_arms] = True
    return mask


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


class FirstRound:
    """:func:`first_round` for ``replicas`` replicas, free once every arm of every replica has
    an observation (counts never decrease, so the check stops then)."""

    def __init__(self, replicas: int) -> None:
        self._all_rows = np.arange(replicas)
        self.over = False

    def split(self, stats: ArmStats) -> tuple[np.ndarray, np.ndarray]:
        """``(ready, arms)``: the replicas with every arm observed (ascending), and ``arms``
        ``(R,)`` holding the first-round arm of every other replica (entries of ``ready`` are
        left for the caller to fill)."""
        if not self.over:
            initialising, arms = first_round(stats)
            if initialising.any():
                return np.flatnonzero(~initialising), arms
            self.over = True
        return self._all_rows, np.zeros(self._all_rows.size, dtype=np.int64)

    def observed_all(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        """The replicas of ``rows`` with every arm observed, ascending."""
        if self.over:
            return np.sort(rows)
        return np.sort(rows[(stats.counts[rows] > 0).all(axis=1)])


class TopSet:
    """Per replica, a set of arms holding the ``need`` largest values, carried from one
    evaluation to the next.

    With ``size == need`` the set is exactly the ``need`` arms with the largest values (exact
    ties: the lower index).  With ``size > need`` it is any ``size`` arms that hold the
    ``need`` largest values (as a multiset): the spare members let a member's value drop
    without a repair, which is what evaluations that only need those values want.

    Values move little between steps, so the previous set is checked against the new values
    by one pass over the arms -- the best arm outside the set against the members -- and
    repaired one swap at a time; rows needing more than :attr:`max_swaps` swaps are rebuilt
    by sorting.  The set is always checked against the values it is given, so it is exact
    however they changed.

    ``ids`` is ``(size, R)`` (see :func:`best_of`); ``penalty`` ``(R, K)`` is ``-inf`` at
    members and 0 elsewhere, so ``values + penalty`` keeps the values outside the set.
    """

    #: Swap rounds before the rows still wrong are rebuilt by sorting.
    max_swaps = 3

    def __init__(self, replicas: int, n_arms: int, need: int, size: int | None = None) -> None:
        self.need = need
        self.ids = np.zeros((min(size or need, n_arms), replicas), dtype=np.int64)
        self.penalty = np.zeros((replicas, n_arms))
        self._masked = np.empty((replicas, n_arms))
        self._built = np.zeros(replicas, dtype=bool)
        self._local = np.arange(0, replicas * n_arms, n_arms)  # flat index of each row's arm 0

    def members(self, rows: np.ndarray) -> np.ndarray:
        """``ids`` of replicas ``rows`` (ascending), ``(size, len(rows))``."""
        return self.ids if rows.size == self.ids.shape[1] else self.ids[:, rows]

    def penalty_of(self, rows: np.ndarray) -> np.ndarray:
        """``penalty`` of replicas ``rows`` (ascending), ``(len(rows), K)``."""
        return self.penalty if rows.size == self.penalty.shape[0] else self.penalty[rows]

    def update(self, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Make the sets of replicas ``rows`` (ascending) right for ``values`` ``(len(rows), K)``.

        Returns the members' values ``(size, len(rows))`` in the order of ``members(rows)``,
        the same sorted ascending (with spare members; else the members' smallest value,
        ``(1, len(rows))``), and the largest value outside each set ``(len(rows),)``.
        """
        fresh = ~self._built[rows]
        if fresh.any():
            self._rebuild(values[fresh], rows[fresh])
        inside, ranked, outside, wrong, best, slot = self._check(values, rows)
        for attempt in range(self.max_swaps + 1):
            if not wrong.size:
                break
            if attempt < self.max_swaps:
                self._swap(rows[wrong], best, slot)
            else:
                self._rebuild(values[wrong], rows[wrong])
            every = 3 * wrong.size > rows.size  # many rows: a pass over all beats gathering them
            again = np.arange(rows.size) if every else wrong
            inside[:, again], ranked[:, again], outside[again], wrong, best, slot = self._check(
                values if every else values[again], rows[again]
            )
            wrong = again[wrong]
        assert not wrong.size, "a rebuilt set failed its check"
        return inside, ranked, outside

    def _check(self, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """Members' values (as given and ranked) and the best value outside, for replicas
        ``rows``; then the rows (positions in ``rows``) where the best arm outside must come
        in, that arm, and the position in ``ids`` of the member it replaces."""
        n = values.shape[0]
        local = self._local[:n]
        ids = self.members(rows)
        members = values.reshape(-1).take(ids + local)
        masked = np.add(values, self.penalty_of(rows), out=self._masked[:n])
        best = np.argmax(masked, axis=1)
        top = masked.reshape(-1).take(local + best)
        spare = ids.shape[0] - self.need
        ranked = np.sort(members, axis=0) if spare else members.min(axis=0, keepdims=True)
        # with spare members, the need-th largest value must not be beaten; without, the
        # worst member must not be beaten nor tied by a lower index
        wrong = np.flatnonzero(top > ranked[spare] if spare else top >= ranked[0])
        if not wrong.size:
            return members, ranked, top, wrong, best, wrong
        if spare:  # any worst member may go: the set only has to hold the values
            return members, ranked, top, wrong, best[wrong], np.argmin(members[:, wrong], axis=0)
        # the worst member with the largest id goes, unless it is only tied from a larger id
        ids, worst = ids[:, wrong], ranked[0, wrong]
        slot = np.argmax(np.where(members[:, wrong] == worst, ids, -1), axis=0)
        beats = (top[wrong] > worst) | (best[wrong] < ids[slot, np.arange(wrong.size)])
        return members, ranked, top, wrong[beats], best[wrong[beats]], slot[beats]

    def _swap(self, rows: np.ndarray, best: np.ndarray, slot: np.ndarray) -> None:
        """Replace each row's member at position ``slot`` of ``ids`` by its best outside arm."""
        self.penalty[rows, self.ids[slot, rows]] = 0.0
        self.ids[slot, rows] = best
        self.penalty[rows, best] = -np.inf

    def _rebuild(self, values: np.ndarray, rows: np.ndarray) -> None:
        ids = np.argsort(-values, axis=1, kind="stable")[:, : self.ids.shape[0]].T
        self.ids[:, rows] = ids
        self.penalty[rows] = np.where(set_mask(ids, values.shape[1]), -np.inf, 0.0)
        self._built[rows] = True


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
