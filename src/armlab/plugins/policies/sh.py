"""Sequential Halving (Karnin, Koren & Somekh 2013), in the meta-algorithm form of the
heterogeneous-variance paper (Algorithms 1-2); docs/algorithms/fixed-budget.md."""

from __future__ import annotations

import math

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED, Policy
from armlab.plugins.round_robin import RoundRobin
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["SequentialHalving"]


class SequentialHalving(Policy):
    """Sequential Halving, for every replica at once.

    Budget ``n``, ``K`` arms, ``S = ceil(log2 K)`` stages of ``n_s = floor(n / S)`` pulls;
    ``A_s`` the arms active in stage ``s``, ``N_{s,i}`` the pulls of arm ``i`` so far in stage
    ``s`` (pending ones included), ``mu_{s,i}`` the mean of its results observed in stage ``s``.

    * In stage ``s`` the *base rule* pulls the arms of ``A_s``: round robin for SH, the arm of
      ``A_s`` with the fewest ``N_{s,i}`` (lowest index first); SHVar and SHAdaVar override
      :meth:`base_rule`.
    * Once the stage's ``n_s`` pulls are dispatched, the ``ceil(|A_s| / 2)`` arms of ``A_s``
      with the largest ``mu_{s,i}`` stay active (ties: lower index) and stage ``s + 1`` begins.
    * After the last stage the policy stops (STOPPED): the ``n - S n_s`` leftover pulls are
      not used.  The answer is then the arm of ``A_S`` with the largest ``mu_{S,i}``; before,
      the active arm with the largest cumulative mean.

    Requires ``n_s >= K``, so that every arm gets a stage-1 sample.  Pending pulls count in
    ``N_{s,i}`` and in the schedule, not in the means; a result that arrives after its stage
    ended is folded into the arm's current-stage statistics (another i.i.d. sample of the
    same arm); the final answer waits for all results.
    """

    name = "sh"
    objectives = frozenset({Objective.BEST_ARM})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        self.n_stages = max(1, math.ceil(math.log2(k)))  # S
        self.stage_budget = problem.budget // self.n_stages  # n_s
        if self.stage_budget < k:
            raise ConfigError(
                f"{self.name}: budget {problem.budget} is too small for {k} arms: each of the "
                f"{self.n_stages} stages gets floor(n / ceil(log2 K)) = {self.stage_budget} pulls, "
                f"fewer than K = {k}. Use a budget of at least {self.n_stages * k}."
            )
        self.stage = np.zeros(replicas, dtype=np.int64)  # s - 1
        self.stage_end = np.full(replicas, self.stage_budget)  # dispatches at which stage s ends
        self.n_active = np.full(replicas, k)  # |A_s|
        self.stage_start = np.zeros((replicas, k), dtype=np.int64)  # each arm's pulls when s began
        self.stage_n = np.zeros((replicas, k), dtype=np.int64)  # results observed in stage s
        self.stage_mean = np.zeros((replicas, k))  # mu_{s,i}
        self.flat_stage_n, self.flat_stage_mean = self.stage_n.reshape(-1), self.stage_mean.reshape(-1)  # views
        self.round_robin = RoundRobin(replicas, k)  # argmin of N_{s,i} over A_s

    def select(self, stats: ArmStats) -> np.ndarray:
        ended = stats.dispatched >= self.stage_end  # the stage's n_s pulls are all dispatched
        if not ended.any():
            return self.base_rule(stats)
        last = self.stage == self.n_stages - 1
        self.next_stage(stats, np.flatnonzero(ended & ~last))
        return np.where(ended & last, STOPPED, self.base_rule(stats))

    def base_rule(self, stats: ArmStats) -> np.ndarray:
        """Round robin: the arm of ``A_s`` with the fewest ``N_{s,i}``, lowest index first."""
        return self.round_robin.select(stats)

    def next_stage(self, stats: ArmStats, rows: np.ndarray) -> None:
        """End the stage of replicas ``rows``: keep the better half of ``A_s``, start the
        next stage with its statistics empty."""
        if rows.size == 0:
            return
        self.halve(stats, rows)
        self.stage[rows] += 1
        self.stage_end[rows] += self.stage_budget
        self.stage_start[rows] = stats.pulls[rows]
        self.stage_n[rows] = 0
        self.stage_mean[rows] = 0.0
        self.round_robin.restart(stats, rows, self.stage_start[rows])

    def halve(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Keep the ``ceil(|A_s| / 2)`` active arms with the largest ``mu_{s,i}`` (ties:
        lower index)."""
        active = stats.active[rows]
        keep = np.ceil(active.sum(axis=1) / 2).astype(np.int64)
        score = np.where(active, self.stage_mean[rows], -np.inf)
        order = np.argsort(-score, axis=1, kind="stable")  # stable: lower index wins ties
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :], axis=1)
        stats.active[rows] = active & (rank < keep[:, None])
        self.n_active[rows] = keep

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self.fold_stage_results(stats.flat_index(rows, arms), rewards)
        self.round_robin.observed(stats, rows, arms)

    def fold_stage_results(self, flat: np.ndarray, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add results to the stage counts and means at flat positions ``flat``
        (:meth:`ArmStats.flat_index`), as :class:`ArmStats` does (Welford); return each
        result's deviation from the mean before and the mean after."""
        n = self.flat_stage_n[flat] + 1
        mean = self.flat_stage_mean[flat]
        delta = rewards - mean
        mean += delta / n
        self.flat_stage_n[flat] = n
        self.flat_stage_mean[flat] = mean
        return delta, mean

    def recommend(self, stats: ArmStats) -> np.ndarray:
        """After the last stage, all results in: its winner; else the active arm with the
        largest cumulative mean (the heterogeneous-variance paper's anytime answer)."""
        finished = (stats.dispatched >= self.n_stages * self.stage_budget) & (stats.pending.sum(axis=1) == 0)
        usable = stats.active & (stats.counts > 0)
        cumulative = np.argmax(np.where(usable, stats.means, -np.inf), axis=1)
        final = np.argmax(np.where(stats.active, self.stage_mean, -np.inf), axis=1)
        return np.where(finished & (self.stage == self.n_stages - 1), final, cumulative)
