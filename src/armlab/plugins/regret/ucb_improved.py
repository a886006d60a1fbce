"""UCB-Improved (Auer & Ortner 2010, "UCB revisited: improved regret bounds for the stochastic
multi-armed bandit problem")."""

from __future__ import annotations

import math

import numpy as np

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

    Speed: one argmin per step (:class:`~armlab.plugins.round_robin.RoundRobin`)
    gives the round robin's arm and, while nothing is pending, the fewest results of an
    active arm, which tells whether a round is complete; the elimination and the empirical
    best are computed only for the replicas concerned.
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

    def _advance(self, stats: ArmStats, low: np.ndarray) -> bool:
        """Eliminate and start the next round where every active arm reached ``n_m`` results
        (``low``: each replica's fewest results of an active arm); return whether any did."""
        if self.last < 0:  # T < e: no rounds at all
            return False
        rows = np.flatnonzero((self.round <= self.last) & (low >= self.targets[np.minimum(self.round, self.last)]))
        advanced = False
        while rows.size:
            active = stats.active[rows]
            running = active.sum(axis=1) > 1
            rows, active = rows[running], active[running]
            advanced |= rows.size > 0
            width = self.widths[self.round[rows]][:, None]
            means = stats.means[rows]
            best_lower = np.where(active, means, -np.inf).max(axis=1, keepdims=True) - width
            active &= means + width >= best_lower
            stats.active[rows] = active
            self.round_robin.restart(stats, rows, 0)
            self.round[rows] += 1
            target = self.targets[np.minimum(self.round[rows], self.last)][:, None]
            complete = ((stats.counts[rows] >= target) | ~active).all(axis=1)
            rows = rows[complete & (self.round[rows] <= self.last)]
        return advanced

    def select(self, stats: ArmStats) -> np.ndarray:
        pulls = self.round_robin.pulls(stats)
        fewest = np.argmin(pulls, axis=1)
        if stats.all_observed():  # nothing pending: the pulls are the counts
            low = pulls[np.arange(stats.replicas), fewest]
        else:
            low = np.where(stats.active, stats.counts, np.iinfo(np.int64).max).min(axis=1)
        if self._advance(stats, low):  # eliminations: count again
            fewest = self.round_robin.select(stats)
        done = np.flatnonzero(self.round > self.last)
        if done.size:
            fewest[done] = np.argmax(np.where(stats.active[done], stats.means[done], -np.inf), axis=1)
        return fewest
