"""Median Elimination (Even-Dar, Mannor & Mansour 2006, JMLR 7) run as a regret policy."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins._fast.result_quota import ResultQuota
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.round_robin import RoundRobin
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["MedianElimination"]


class MedianEliminationParams(PluginParams):
    epsilon: float = Field(0.1, gt=0, lt=1, description="accuracy epsilon of ME(epsilon, delta) (the EUCBV paper: 0.1)")
    delta: float = Field(0.1, gt=0, lt=1, description="confidence delta of ME(epsilon, delta) (the EUCBV paper: 0.1)")
    square: bool = Field(
        True,
        description="round size (4 / eps_l^2) log(3 / delta_l) (the paper); false: the author code's "
        "(2 / eps_l) log(3 / delta_l)",
    )
    estimates: Literal["fresh", "cumulative"] = Field(
        "fresh", description="median of this round's samples only (the paper) or of all samples (author code)"
    )


class MedianElimination(Policy):
    """Median Elimination: round ``l`` samples every surviving arm ``s_l`` times and keeps the
    ``ceil(|S| / 2)`` arms with the largest means (ties at random); ``eps`` and ``delta``
    start at ``eps / 4`` and ``delta / 2`` and shrink by 3/4 and 1/2 per round.

    Source: docs/algorithms/regret.md (the paper's schedule, checked against RAL's
    ``MedianElimination.m``).  As a regret policy (armlab's choice, as the author code):
    every sample counts against the horizon, round robin inside a round, the run simply ends
    at ``T`` (mid-round if so), and the last survivor is pulled until ``T``.  ``T`` is never
    read.  Analysed for rewards in [0, 1]; other rewards are used raw.  Pending pulls count
    toward the round-robin targets; a round ends once every survivor has ``s_l`` *observed*
    round samples; results that arrive after their round ended enter the next round's
    estimates (i.i.d. samples of the same arm), and the round robin continues while a
    round's last results are in flight (both only under delayed feedback).  Eliminated arms
    are cleared from ``stats.active``.

    Whether every survivor has its ``s_l`` round samples is kept by a
    :class:`~armlab.plugins._fast.result_quota.ResultQuota`.
    """

    name = "median-elimination"
    Params = MedianEliminationParams
    objectives = frozenset({Objective.REGRET})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        self.round_sizes = self.schedule(max(1, math.ceil(math.log2(k))))
        self.round = np.zeros(replicas, dtype=np.int64)
        self.round_robin = RoundRobin(replicas, k)  # counts the pulls since the round began
        self.round_n = np.zeros((replicas, k), dtype=np.int64)  # samples of this round
        self.round_mean = np.zeros((replicas, k))  # their mean
        self.survivors = np.full(replicas, k)  # |S|
        self._quota = ResultQuota(replicas, k, self.round_sizes[0])  # s_l round samples of each survivor

    def schedule(self, rounds: int) -> np.ndarray:
        """Per-arm sample sizes ``s_l`` of the first ``rounds`` rounds."""
        p = self.params
        eps = p.epsilon / 4 * 0.75 ** np.arange(rounds)
        log_term = np.log(3.0 / (p.delta / 2 * 0.5 ** np.arange(rounds)))
        scale = 4.0 / eps**2 if p.square else 2.0 / eps
        return np.ceil(scale * log_term).astype(np.int64)

    def _advance(self, stats: ArmStats) -> None:
        """Halve the survivors of every replica whose round has all its results."""
        rows = np.flatnonzero(self._quota.complete(stats, self.round_n) & (self.survivors > 1))
        if rows.size == 0:
            return
        active = stats.active[rows]
        estimate = self.round_mean[rows] if self.params.estimates == "fresh" else stats.means[rows]
        score = np.where(active, estimate, -np.inf)
        noise = self.rng.uniform(stats.dispatched[rows], stats.n_arms, rows=rows)
        order = np.lexsort((noise, -score), axis=1)  # largest estimate first, random among ties
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :], axis=1)
        keep = np.ceil(active.sum(axis=1) / 2)[:, None]
        active &= rank < keep
        stats.active[rows] = active
        self.round[rows] += 1
        self.round_robin.restart(stats, rows, stats.pulls[rows])
        self.round_n[rows] = 0
        self.round_mean[rows] = 0.0
        self.survivors[rows] = active.sum(axis=1)
        size = self.round_sizes[np.minimum(self.round[rows], self.round_sizes.size - 1)]
        self._quota.start(stats, rows, size, self.round_n[rows])

    def select(self, stats: ArmStats) -> np.ndarray:
        self._advance(stats)
        return self.round_robin.select(stats)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        flat = stats.flat_index(rows, arms)
        n = self.round_n.reshape(-1)[flat] + 1
        self.round_n.reshape(-1)[flat] = n
        mean = self.round_mean.reshape(-1)[flat]
        self.round_mean.reshape(-1)[flat] = mean + (rewards - mean) / n
        self._quota.observed(stats, rows, arms, n)
