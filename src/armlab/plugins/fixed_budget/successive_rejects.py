"""Successive Rejects (Audibert, Bubeck & Munos, COLT 2010) and its phase schedule."""

from __future__ import annotations

import math

import numpy as np

from armlab.plugins.interfaces import STOPPED, Policy
from armlab.plugins.round_robin import RoundRobin
from armlab.plugins.thresholding._common import require_budget
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["SuccessiveRejects", "logbar", "sr_phase_ends", "sr_phase_lengths"]


def logbar(n_arms: int) -> float:
    """Successive Rejects' ``logbar(K) = 1/2 + sum_{i=2..K} 1/i``."""
    return 0.5 + math.fsum(1.0 / i for i in range(2, n_arms + 1))


def sr_phase_lengths(budget: int, n_arms: int) -> np.ndarray:
    """``n_k = ceil((n - K) / (logbar(K) (K + 1 - k)))`` for phases ``k = 1..K-1``, with
    :func:`logbar`: the pulls each arm alive in phase k has by its end."""
    k = np.arange(1, n_arms)
    return np.ceil((budget - n_arms) / (logbar(n_arms) * (n_arms + 1 - k))).astype(np.int64)


def sr_phase_ends(budget: int, n_arms: int) -> np.ndarray:
    """Total pulls when phase ``k = 1..K-1`` ends: ``n_1 + ... + n_{k-1} + (K + 1 - k) n_k``
    (one arm was rejected after each earlier phase).  The last entry never exceeds ``n``."""
    lengths = sr_phase_lengths(budget, n_arms)
    before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return before + (n_arms + 1 - np.arange(1, n_arms)) * lengths


class SuccessiveRejects(Policy):
    """Successive Rejects: ``K - 1`` phases; in phase ``k`` every surviving arm is pulled until
    it has ``n_k`` pulls (round robin in index order), then the surviving arm with the smallest
    empirical mean (cumulative over all phases) is rejected; the last survivor is the answer.

    Source: Audibert, Bubeck & Munos, "Best arm identification in multi-armed bandits",
    COLT 2010 (docs/algorithms/fixed-budget.md):
    ``n_k = ceil((n - K) / (logbar(K) (K + 1 - k)))`` (:func:`sr_phase_lengths`).  The schedule
    uses at most n pulls (``9962`` of ``n = 10000`` for K = 100); the policy then returns
    STOPPED.  Requires ``n > K``.  No reward assumption (analysed for [0, 1]).  Ties in a
    rejection: the lowest index is rejected.  Anytime answer (before the end): the surviving
    arm with the largest empirical mean.

    Pending pulls count toward the schedule, not the statistics: a rejection uses the results
    observed when the phase's last pull is dispatched (late results count in later phases;
    an arm with no observed result yet is never rejected).  The final rejection, which names
    the answer, waits for every result.  Subclasses change the rejection rule by overriding
    :meth:`rejection_keys` (VBR).
    """

    name = "sr"
    objectives = frozenset({Objective.BEST_ARM})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        require_budget(self, problem, k, "n > K, so that every arm gets a phase-1 pull")
        self.phase_ends = sr_phase_ends(problem.budget, k)  # total pulls when phase k ends
        self.total_pulls = int(self.phase_ends[-1])
        self.rejections = np.zeros(replicas, dtype=np.int64)  # phases ended so far: k - 1
        self.phase_end = np.full(replicas, self.phase_ends[0])  # total pulls when phase k ends
        self.round_robin = RoundRobin(replicas, k)  # the surviving arm with the fewest pulls

    def select(self, stats: ArmStats) -> np.ndarray:
        ended = stats.dispatched >= self.phase_end  # the phase's pulls are all dispatched
        if not ended.any():
            return self.round_robin.select(stats)
        final = self.rejections == stats.n_arms - 2  # its rejection waits for every result
        rows = np.flatnonzero(ended & ~final)
        while rows.size:  # phases without pulls of their own end at once
            self.reject(stats, rows)
            ended = stats.dispatched >= self.phase_end
            final = self.rejections == stats.n_arms - 2
            rows = np.flatnonzero(ended & ~final)
        return np.where(ended & final, STOPPED, self.round_robin.select(stats))

    def reject(self, stats: ArmStats, rows: np.ndarray) -> None:
        """End the phase of replicas ``rows``: reject one arm, start the next phase."""
        stats.active[rows, self.rejected_arm(stats, rows)] = False
        self.rejections[rows] += 1
        self.phase_end[rows] = self.phase_ends[self.rejections[rows]]
        self.round_robin.restart(stats, rows, 0)

    def rejection_keys(self, stats: ArmStats) -> list[np.ndarray]:
        """Keys ``(R, K)``, most significant first: the arm with the smallest keys is rejected."""
        return [np.where(stats.counts > 0, stats.means, np.inf)]

    def rejected_arm(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        """The arm rejected in each of ``rows``: the surviving arm with the smallest keys,
        compared key by key, then the lowest index."""
        candidates = stats.active[rows]  # a copy
        for key in self.rejection_keys(stats):
            key = np.where(candidates, key[rows], np.inf)
            candidates &= key == key.min(axis=1, keepdims=True)
        return np.argmax(candidates, axis=1)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self.round_robin.observed(stats, rows, arms)

    def recommend(self, stats: ArmStats) -> np.ndarray:
        """The survivor of the final rejection once every result is in; before that the
        surviving arm with the largest empirical mean."""
        seen = stats.active & (stats.counts > 0)
        answer = np.argmax(np.where(seen, stats.means, -np.inf), axis=1)
        finished = (stats.dispatched >= self.total_pulls) & (stats.pending.sum(axis=1) == 0)
        rows = np.flatnonzero(finished & (self.rejections == stats.n_arms - 2))
        if rows.size:  # two arms survive: the answer is the one the final rejection keeps
            survivors = stats.active[rows]
            survivors[np.arange(rows.size), self.rejected_arm(stats, rows)] = False
            answer[rows] = np.argmax(survivors, axis=1)
        return answer
