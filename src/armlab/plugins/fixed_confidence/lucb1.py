"""LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone 2012): (epsilon, m) top-m identification with
a fixed confidence, as originally defined (two pulls per round).  Definition:
docs/algorithms/fixed-confidence.md."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field

from armlab.plugins._fast.kept_top_set import KeptTopSet
from armlab.plugins._fast.lookup_by_count_at_level import LookupByCountAtLevel
from armlab.plugins.fixed_confidence.common import (
    InitialRound,
    StoppingRule,
    at_arms,
    best_of,
    require_top_m,
    resolve_delta,
    reward_span,
    set_mask,
    top_m,
)
from armlab.plugins.interfaces import STOPPED, PluginParams
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["LUCB1", "lucb_width"]

#: k1 in LUCB1's exploration rate ln(k1 K t^4 / delta).
K1 = 1.25


def lucb_width(pulls: ArrayLike, t: ArrayLike, n_arms: int, delta: float) -> np.ndarray:
    """LUCB1's Hoeffding width ``sqrt(ln(k1 K t^4 / delta) / (2 u))`` with ``k1 = 5/4``,
    for an arm with ``u = pulls`` rewards at round (or time) ``t``; rewards in [0, 1].
    An arm without rewards (``u = 0``) has an infinite width."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.sqrt(np.log(K1 * n_arms * t**4 / delta) / (2.0 * np.asarray(pulls, dtype=np.float64)))


class LUCB1Params(PluginParams):
    delta: float | None = Field(
        None, gt=0, lt=1, description="confidence parameter; default: [problem] delta"
    )
    b: float | None = Field(
        None, gt=0, description="rewards lie in [0, b] (widths scale with b); default: the source's range width"
    )


class LUCB1(StoppingRule):
    """LUCB1 (Kalyanakrishnan et al. 2012, ICML): pull every arm once; then in round t let
    High = the m arms with the largest empirical means (ties: lower index), h = the arm of
    High with the smallest lower bound and l = the arm outside High with the largest upper
    bound, bounds ``mean -/+ b * sqrt(ln(5 K t^4 / (4 delta)) / (2 u))``.  Stop and answer
    High when ``U_l - L_h < epsilon``; otherwise pull h and l.

    The round's two pulls are serialized into two consecutive steps (h, then l), both chosen
    from the statistics at the start of the round; ``t`` counts rounds, so the width grows
    as in the original.  Rewards in ``[0, b]`` (the paper: b = 1).  Pending pulls count
    toward the initial round; rounds, widths and the stopping test use observed rewards
    only (with delayed feedback a round may start before the previous round's results are
    in).  Only the Hoeffding width exists in the original.
    """

    name = "lucb1"
    Params = LUCB1Params

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.top_m = require_top_m(self.name, problem)
        self.span = reward_span(self.name, problem, self.params.b)
        self.delta = resolve_delta(self.name, problem, self.params.delta)
        self.rounds = np.zeros(replicas, dtype=np.int64)
        self.round_at = np.full(replicas, -1, dtype=np.int64)  # dispatched count when h was chosen
        self.pair = np.zeros((replicas, 2), dtype=np.int64)  # (h, l) of the current round
        self._initial = InitialRound(replicas)
        self._high = KeptTopSet(top_m, replicas, problem.n_arms, size=self.top_m)  # High, kept
        self._widths = LookupByCountAtLevel(self.width)  # a function of the count while t is shared

    def width(self, counts: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The width ``b sqrt(ln(k1 K t^4 / delta) / (2 u))`` of arms with ``u = counts`` rewards
        in round ``t``."""
        return self.span * lucb_width(counts, t, self.problem.n_arms, self.delta)

    def select(self, stats: ArmStats) -> np.ndarray:
        ready, arms = self._initial.split(stats)
        started = self.round_at[ready]
        starting = ~self.confident[ready] & ((started < 0) | (stats.dispatched[ready] >= started + 2))
        if starting.any():
            self.start_rounds(stats, ready[starting])
        in_round = ready[self.round_at[ready] >= 0]
        second = (stats.dispatched[in_round] > self.round_at[in_round]).astype(np.int64)
        arms[in_round] = self.pair[in_round, second]
        return np.where(self.confident, STOPPED, arms)

    def start_rounds(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Start round ``t`` of replicas ``rows`` (ascending): choose h and l, or stop."""
        self.rounds[rows] += 1
        every = rows.size == stats.replicas
        means = stats.means if every else stats.means[rows]
        counts = stats.counts if every else stats.counts[rows]
        beta = self._widths.values(counts, self.rounds[rows])
        U, L = means + beta, means - beta
        High = self._high.largest(means, rows).ids.T  # the m arms of largest mean (ties: lower index)
        h = best_of(High, at_arms(L, High), largest=False)  # argmin_{High} L (ties: lower index)
        l = np.argmax(self._high.outside(U, rows), axis=1)  # argmax_{not High} U (ties: lower index)
        index = np.arange(rows.size)
        done = U[index, l] - L[index, h] < self.problem.epsilon
        self.freeze(rows[done], set_mask(High[done], stats.n_arms))
        self.round_at[rows] = stats.dispatched[rows]
        self.pair[rows, 0], self.pair[rows, 1] = h, l

    def anytime_set(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        return set_mask(top_m(stats.means[rows], self.top_m), stats.n_arms)
