"""AugUCB, Augmented UCB for thresholding bandits (seed 000, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.policies._index import argmax_random_ties, select_by_index
from armlab.plugins.thresholding._common import (
    ArmwiseKeyPolicy,
    IndexParams,
    gathered,
    require_budget,
    threshold_of,
)
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

@dataclass(frozen=True)
class AugUCBSchedule:
    """Round constants of AugUCB for budget ``T`` and ``K`` arms (natural logs).

    ``A = ln((3/16) K ln K)``, ``M = floor(log2(T / e) / 2)``; in round m with
    ``eps = 2^-m``: ``psi = T eps / (128 A^2)`` and ``ell = ceil(2 psi ln(T eps) / eps)``.
    """

    budget: int
    n_arms: int

    @property
    def a_constant(self) -> float:
        k = self.n_arms
        return math.log(3.0 / 16.0 * k * math.log(k))

    @property
    def last_round(self) -> int:
        """M: resets happen while the round index is at most M."""
        return math.floor(0.5 * math.log2(self.budget / math.e))

    def psi(self, eps: np.ndarray) -> np.ndarray:
        return self.budget * eps / (128.0 * self.a_constant**2)

    def log_term(self, eps: np.ndarray) -> np.ndarray:
        return np.log(self.budget * eps)

    def ell(self, eps: np.ndarray) -> np.ndarray:
        """Pulls per active arm in the round with parameter ``eps``."""
        return np.ceil(2.0 * self.psi(eps) * self.log_term(eps) / eps).astype(np.int64)


class AugUCBParams(IndexParams):
    rho: float = Field(
        1.0 / 3.0, gt=0, description="arm-elimination parameter rho (Theorem 3.1 and seed 000: 1/3)"
    )


class AugUCB(ArmwiseKeyPolicy):
    """AugUCB: UCB-Improved-style rounds with variance-aware elimination after every pull.

    Source: Mukherjee, Naveen, Sudarsanam & Ravindran, "Thresholding bandits with augmented
    UCB" (IJCAI 2017), Algorithm 1, as specified in sheet section 2.1.  After one pull of
    each arm, pull ``argmin_{i in B} |mean_i - tau| - 2 s_i`` with
    ``s_i = sqrt(rho psi_m (v_i + 1) ln(T eps_m) / (4 n_i))`` (``v_i`` the biased empirical
    variance); after every pull remove from ``B`` each arm with ``|mean_i - tau| > 2 s_i``;
    when ``t >= N_m`` and ``m <= M`` halve ``eps`` and set ``N = t + |B| ell``.  When ``B`` is
    empty the replica stops (STOPPED) and its output is frozen.  Output: the common rule
    ``{i : n_i >= 1, mean_i >= tau}`` over all arms.  Assumes rewards in [0, 1] (so
    ``v_i <= 1``); runs on any real rewards.  Requires ``K >= 5`` (``A > 0``) and ``T > K``.

    Choices where the paper is unclear (Part C #4-#7): one time increment per pull, floor in
    M, the paper's psi (not the public code's), eliminations and resets from ``t = K + 1``.

    Pending pulls: ``t`` counts dispatched pulls (the round schedule), ``n_i`` in the
    selection width counts pulls (observed + pending), while eliminations use observed
    rewards and counts only.  With immediate feedback this is Algorithm 1 exactly.
    """

    name = "augucb"
    Params = AugUCBParams
    objectives = frozenset({Objective.THRESHOLD})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        if k < 5:
            raise ConfigError(
                f"{self.name}: needs K >= 5 arms, got K = {k}: A = ln((3/16) K ln K) must be clearly "
                f"positive (K = 4 gives A = 0.04 and absurd round lengths). Use another policy."
            )
        require_budget(self, problem, k, "one initial pull per arm")
        self.threshold = threshold_of(self, problem)
        self.schedule = AugUCBSchedule(problem.budget, k)
        self.round = np.zeros(replicas, dtype=np.int64)
        self.eps = np.ones(replicas)
        self.round_end = np.full(replicas, k * int(self.schedule.ell(np.ones(1))[0]), dtype=np.int64)
        # replicas whose arms must all be checked at the next result: none checked yet, or a
        # new round shrank every radius; otherwise only the arm whose result arrived can change
        self.check_all = np.ones(replicas, dtype=bool)

    def radius(self, stats: ArmStats, n: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``s_i`` of all arms for replicas ``rows``, with ``n_i = n`` (``(len(rows), K)``)."""
        return self._radius(self.eps[rows][:, None], stats.m2[rows], stats.counts[rows], n)

    def _radius(self, eps: np.ndarray, m2: np.ndarray, counts: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``sqrt(rho psi (v + 1) ln(T eps) / (4 n))`` with the biased variance ``v = M2 / counts``;
        zero counts are treated as one (their ``M2`` is 0)."""
        coefficient = self.params.rho * self.schedule.psi(eps) * self.schedule.log_term(eps) / 4.0
        return np.sqrt(coefficient * (m2 / np.maximum(counts, 1) + 1.0) / np.maximum(n, 1))

    def _advance(self, stats: ArmStats) -> None:
        """Start the next round where ``t >= N_m`` and ``m <= M`` (a pure function of stats)."""
        due = (
            (stats.dispatched > stats.n_arms)
            & (stats.dispatched >= self.round_end)
            & (self.round <= self.schedule.last_round)
            & stats.active.any(axis=1)
        )
        rows = np.flatnonzero(due)
        if rows.size == 0:
            return
        self.round[rows] += 1
        self.eps[rows] /= 2.0
        self.check_all[rows] = True
        remaining = stats.active[rows].sum(axis=1)
        self.round_end[rows] = stats.dispatched[rows] + remaining * self.schedule.ell(self.eps[rows])
        self._negated_key.refresh_rows(stats, rows)  # every radius shrank

    def key_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """``|mean_i - tau| - 2 s_i`` (selection width over pulls); eliminated arms get +inf."""
        counts, pulls, means = gathered(stats, flat)
        radius = self._radius(self.eps[rows], stats.m2.reshape(-1)[flat], counts, pulls)
        key = np.abs(means - self.threshold) - 2.0 * radius
        return np.where(stats.active.reshape(-1)[flat], key, np.inf)

    def select(self, stats: ArmStats) -> np.ndarray:
        self._advance(stats)
        index = self._negated_key.current(stats)  # eliminated arms at -inf
        if not self._warmup.done:
            self._warmup.done = bool(stats.counts.min() >= 1)
        rng = self.rng if self.params.tie_break == "random" else None
        if not self._warmup.done:
            arms = select_by_index(stats, index, need=1, rng=rng)
        elif rng is None:
            arms = np.argmax(index, axis=1)
        else:
            arms = argmax_random_ties(index, rng, stats.dispatched)
        return np.where(stats.active.any(axis=1), arms, STOPPED)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        """Eliminate every arm of ``B`` with ``|mean - tau| > 2 s`` (observed counts), from t = K + 1."""
        ready = stats.observed[rows] > stats.n_arms
        observed_rows, observed_arms = rows, arms
        rows, arms = rows[ready], arms[ready]
        full = self.check_all[rows]
        one, pulled = rows[~full], arms[~full]
        if one.size:
            n = stats.counts[one, pulled]
            s = self._radius(self.eps[one], stats.m2[one, pulled], n, n)
            stats.active[one, pulled] &= np.abs(stats.means[one, pulled] - self.threshold) <= 2.0 * s
        every = rows[full]
        if every.size:
            counts = stats.counts[every]
            gaps = np.abs(stats.means[every] - self.threshold)
            drop = (counts > 0) & (gaps > 2.0 * self.radius(stats, counts, every))
            stats.active[every] &= ~drop
            self.check_all[every] = False
        self._negated_key.observed(stats, observed_rows, observed_arms)
        self._negated_key.refresh_rows(stats, every)
