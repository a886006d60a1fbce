"""UCB-Improved (Auer & Ortner 2010, "UCB revisited: improved regret bounds for the stochastic
multi-armed bandit problem")."""

from __future__ import annotations

import math

import numpy as np

from armlab.plugins._fast.result_quota import ResultQuota
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.round_robin import RoundRobin
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["UCBImproved"]


class UCBImproved(Policy):
    """UCB-Improved: rounds ``m = 0..M`` (``M = floor(log2(T/e) / 2)``) that top every active
    arm up to ``n_m = ceil(2 log(T d^2) / d^2)`` pulls in total (``d = 2^-m``), then remove
    the arms with ``mean_i + w < max_j mean_j - w``, ``w = sqrt(log(T d^2) / (2 n_m))``.

    Source: docs/algorithms/regret.md (cumulative targets, as SMPY's ``UCBimproved``; the
    author code's block order and extra samples are not reproduced).  Inside a round the arms
    are served round robin in increasing index (the active arm with the fewest pulls); a
    single survivor is pulled until ``T``; if rounds run out with several arms left, the
    empirical best of them is pulled (never reached in the EUCBV paper's settings).  Needs the
    horizon ``T``.  Analysed for rewards in [0, 1]; other rewards are used raw.  Pending
    pulls count toward the round-robin targets; a round ends (and eliminates) once every
    active arm has ``n_m`` *observed* pulls, and while its last results are in flight the
    round robin goes on (those extra samples are i.i.d. and simply count, a deviation that
    only exists under delayed feedback).  Eliminated arms are cleared from ``stats.active``.

    Whether every active arm has its ``n_m`` results is kept by a
    :class:`~armlab.plugins._fast.result_quota.ResultQuota`.
    """

    name = "ucb-improved"
    Params = PluginParams
    objectives = frozenset({Objective.REGRET})
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        horizon = problem.budget
        self.last = math.floor(0.5 * math.log2(horizon / math.e))  # M
        gaps = 0.5 ** np.arange(max(self.last + 1, 0))
        logs = np.log(np.maximum(horizon * gaps**2, math.e))  # >= 1 for m <= M; the floor is a guard
        self.targets = np.ceil(2.0 * logs / gaps**2).astype(np.int64)  # n_m
        self.widths = np.sqrt(logs / (2.0 * self.targets))
        self.round = np.zeros(replicas, dtype=np.int64)
        self.round_robin = RoundRobin(replicas, problem.n_arms)  # the active arm with the fewest pulls
        self._quota = ResultQuota(replicas, problem.n_arms, self.targets[0] if self.last >= 0 else 0)  # n_m each

    def _advance(self, stats: ArmStats) -> None:
        """Eliminate and start the next round where every active arm has its ``n_m`` results."""
        if self.last < 0:  # T < e: no rounds at all
            return
        rows = np.flatnonzero((self.round <= self.last) & self._quota.complete(stats, stats.counts))
        while rows.size:
            active = stats.active[rows]
            running = active.sum(axis=1) > 1
            rows, active = rows[running], active[running]
            width = self.widths[self.round[rows]][:, None]
            means = stats.means[rows]
            best_lower = np.where(active, means, -np.inf).max(axis=1, keepdims=True) - width
            active &= means + width >= best_lower
            stats.active[rows] = active
            self.round_robin.restart(stats, rows, 0)
            self.round[rows] += 1
            self._quota.start(stats, rows, self.targets[np.minimum(self.round[rows], self.last)], stats.counts[rows])
            rows = rows[self._quota.complete(stats, stats.counts)[rows] & (self.round[rows] <= self.last)]

    def select(self, stats: ArmStats) -> np.ndarray:
        self._advance(stats)
        arms = self.round_robin.select(stats)
        done = np.flatnonzero(self.round > self.last)
        if done.size:
            arms[done] = np.argmax(np.where(stats.active[done], stats.means[done], -np.inf), axis=1)
        return arms

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._quota.observed(stats, rows, arms, stats.counts[rows, arms])
