"""LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone 2012): (epsilon, m) top-m identification with
a fixed confidence, as originally defined (two pulls per round).  Definition:
ALGORITHMS-pure-exploration.md section 4.4 and Appendix P."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field

from armlab.plugins.fixed_confidence.common import (
    StoppingRule,
    argbest,
    first_round,
    require_top_m,
    resolve_delta,
    reward_span,
    smallest_m,
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
    in).  Only the Hoeffding width exists in the original and in the sheet.
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

    def bounds(self, stats: ArmStats, rows: np.ndarray, rounds: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(High, lower, upper)`` of replicas ``rows`` at round numbers ``rounds``."""
        means = stats.means[rows]
        width = self.span * lucb_width(stats.counts[rows], rounds[:, None], stats.n_arms, self.delta)
        return smallest_m(-means, self.top_m), means - width, means + width

    def select(self, stats: ArmStats) -> np.ndarray:
        initialising, arms = first_round(stats)
        starting = ~initialising & ~self.confident & (
            (self.round_at < 0) | (stats.dispatched >= self.round_at + 2)
        )
        rows = np.flatnonzero(starting)
        if rows.size:
            self.rounds[rows] += 1
            high, lower, upper = self.bounds(stats, rows, self.rounds[rows])
            no_tiebreak = np.zeros_like(lower)  # exact ties: lower index
            h = argbest(lower, no_tiebreak, high, largest=False)
            l = argbest(upper, no_tiebreak, ~high, largest=True)
            index = np.arange(rows.size)
            done = upper[index, l] - lower[index, h] < self.problem.epsilon
            self.freeze(rows[done], high[done])
            self.round_at[rows] = stats.dispatched[rows]
            self.pair[rows] = np.stack([h, l], axis=1)
        in_round = ~initialising & (self.round_at >= 0)
        second = (stats.dispatched > self.round_at).astype(np.int64)
        arms = np.where(in_round, self.pair[np.arange(stats.replicas), second], arms)
        return np.where(self.confident, STOPPED, arms)

    def anytime_set(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        return smallest_m(-stats.means[rows], self.top_m)
