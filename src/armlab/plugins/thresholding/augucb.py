"""AugUCB, Augmented UCB for thresholding bandits (Mukherjee et al., IJCAI 2017, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.selection import argmax, select_by_index
from armlab.plugins.thresholding._common import (
    ArmwiseKeyPolicy,
    IndexParams,
    Variant,
    gathered,
    require_budget,
    threshold_of,
    variant_field,
)
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

#: the authors' code: rho of its mean-only elimination test (its variance test uses ``rho``)
AUTHORS_RHO_MEAN = 1.0 / 8.0


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


@dataclass(frozen=True)
class AuthorsCodeSchedule(AugUCBSchedule):
    """The round constants of the authors' code: the same ``M``, ``eps_m`` and
    ``ell = ceil(2 psi ln(T eps) / eps)``, with ``psi = T eps / (K ln K)`` (no ``A``)."""

    def psi(self, eps: np.ndarray) -> np.ndarray:
        return self.budget * eps / (self.n_arms * math.log(self.n_arms))


class AugUCBParams(IndexParams):
    rho: float = Field(
        1.0 / 3.0,
        gt=0,
        description="arm-elimination parameter rho (Theorem 3.1 and the paper's experiments: 1/3); in the "
        "authors' code the rho_v of the radius s_i and of the variance test (also 1/3)",
    )
    variant: Variant = variant_field(
        "Algorithm 1 as printed",
        "psi = T eps / (K ln K), the radius s_i = sqrt(rho v psi ln(T eps) / (4n) + rho ln(psi T eps) / (4n)) "
        "and an extra mean-only elimination test with rho = 1/8",
    )


class AugUCB(ArmwiseKeyPolicy):
    """AugUCB: UCB-Improved-style rounds with variance-aware elimination after every pull.

    Source: Mukherjee, Naveen, Sudarsanam & Ravindran, "Thresholding bandits with augmented
    UCB" (IJCAI 2017), Algorithm 1.  Two variants (``variant``); both pull each arm once,
    then at every step pull ``argmin_{i in B} |mean_i - tau| - 2 s_i`` over the active set
    ``B`` (``v_i`` the biased empirical variance), eliminate after the pull, and when
    ``t >= N_m`` and ``m <= M = floor(log2(T / e) / 2)`` halve ``eps``, recompute ``psi`` and
    ``ell = ceil(2 psi ln(T eps) / eps)`` and set ``N = t + |B| ell`` (``N_0 = K ell_0``).

    * ``"paper"`` (default), Algorithm 1 as printed: ``psi = T eps / (128 A^2)`` with
      ``A = ln((3/16) K ln K)``; ``s_i = sqrt(rho psi (v_i + 1) ln(T eps) / (4 n_i))``;
      eliminate each arm of ``B`` with ``|mean_i - tau| > 2 s_i``.  Requires ``K >= 5``
      (``A > 0``).  Choices where the paper is unclear: one time increment per pull, floor
      in ``M``, eliminations and resets from ``t = K + 1``.
    * ``"authors-code"``, the authors' public code (their ``AugmentedUCBV2``):
      ``psi = T eps / (K ln K)``;
      ``s_i = sqrt(rho v_i psi ln(T eps) / (4 n_i) + rho ln(psi T eps) / (4 n_i))``
      (``rho = rho_v = 1/3``); after every pull, over every arm of ``B``, first the mean test
      with ``c_i = sqrt(rho_mu psi ln(T eps) / (2 n_i))``, ``rho_mu = 1/8``: eliminate if
      ``mean_i - c_i > tau + c_i`` or ``mean_i + c_i < tau - c_i``; then the same test with
      ``s_i`` in place of ``c_i``.  At ``T = 10000, K = 100`` round 0 lasts ``K ell_0 = 40000``
      pulls, i.e. the whole budget.

    When ``B`` is empty the replica stops (STOPPED) and its output is frozen.  Output: the
    common rule ``{i : n_i >= 1, mean_i >= tau}`` over all arms.  Assumes rewards in [0, 1]
    (so ``v_i <= 1``); runs on any real rewards.  Requires ``T > K``.

    Pending pulls: ``t`` counts dispatched pulls (the round schedule), ``n_i`` in the
    selection width counts pulls (observed + pending), while eliminations use observed
    rewards and counts only.  With immediate feedback this is each variant exactly.
    """

    name = "augucb"
    Params = AugUCBParams
    objectives = frozenset({Objective.THRESHOLD})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        self.authors_code = self.params.variant == "authors-code"
        if k < 5 and not self.authors_code:
            raise ConfigError(
                f"{self.name}: needs K >= 5 arms, got K = {k}: A = ln((3/16) K ln K) must be clearly "
                f"positive (K = 4 gives A = 0.04 and absurd round lengths). Use another policy."
            )
        require_budget(self, problem, k, "one initial pull per arm")
        self.threshold = threshold_of(self, problem)
        self.schedule = (AuthorsCodeSchedule if self.authors_code else AugUCBSchedule)(problem.budget, k)
        self.round = np.zeros(replicas, dtype=np.int64)
        self.eps = np.ones(replicas)
        self.round_end = np.full(replicas, k * int(self.schedule.ell(np.ones(1))[0]), dtype=np.int64)
        # replicas whose arms must all be checked at the next result: none checked yet, or a
        # new round shrank every radius; otherwise only the arm whose result arrived can change
        self.check_all = np.ones(replicas, dtype=bool)

    def radius(self, stats: ArmStats, n: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``s_i`` of all arms for replicas ``rows``, with ``n_i = n`` (``(len(rows), K)``)."""
        if self.authors_code:
            return self._code_radius(stats, n, rows)
        return self._radius(self.eps[rows][:, None], stats.m2[rows], stats.counts[rows], n)

    def _radius(self, eps: np.ndarray, m2: np.ndarray, counts: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``sqrt(rho psi (v + 1) ln(T eps) / (4 n))`` with the biased variance ``v = M2 / counts``;
        zero counts are treated as one (their ``M2`` is 0)."""
        coefficient = self.params.rho * self.schedule.psi(eps) * self.schedule.log_term(eps) / 4.0
        return np.sqrt(coefficient * (m2 / np.maximum(counts, 1) + 1.0) / np.maximum(n, 1))

    # -- the authors' code: plain (R, K) computations at every step -----------------------
    def _code_constants(self, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per replica ``(rho psi ln(T eps) / 4, rho ln(psi T eps) / 4, rho_mu psi ln(T eps) / 2)``,
        as columns: ``s_i = sqrt((first v_i + second) / n_i)`` and ``c_i = sqrt(third / n_i)``."""
        eps = self.eps[rows]
        psi, budget, rho = self.schedule.psi(eps), self.schedule.budget, self.params.rho
        variance_term = rho * psi * np.log(budget * eps) / 4.0
        constant_term = rho * np.log(psi * budget * eps) / 4.0
        mean_term = AUTHORS_RHO_MEAN * psi * np.log(budget * eps) / 2.0
        return variance_term[:, None], constant_term[:, None], mean_term[:, None]

    def _code_radius(self, stats: ArmStats, n: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Authors' code: ``s = sqrt(rho v psi ln(T eps) / (4 n) + rho ln(psi T eps) / (4 n))`` with the
        biased variance ``v`` (zero counts are treated as one; their ``M2`` is 0)."""
        variance_term, constant_term, _ = self._code_constants(rows)
        v = stats.m2[rows] / np.maximum(stats.counts[rows], 1)
        return np.sqrt((variance_term * v + constant_term) / np.maximum(n, 1))

    def _code_key(self, stats: ArmStats) -> np.ndarray:
        """Authors' code: ``|mean_i - tau| - 2 s_i`` of every arm (``n_i`` = pulls); eliminated arms +inf."""
        key = np.abs(stats.means - self.threshold) - 2.0 * self._code_radius(stats, stats.pulls)
        return np.where(stats.active, key, np.inf)

    def _code_select(self, stats: ArmStats) -> np.ndarray:
        """Authors' code: each arm once, then the active arm of lowest key."""
        self._advance(stats)
        rng = self.rng if self.params.tie_break == "random" else None
        arms = select_by_index(stats, -self._code_key(stats), need=1, rng=rng)
        return np.where(stats.active.any(axis=1), arms, STOPPED)

    def _code_eliminate(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Authors' code, from t = K + 1: over every active arm of the replicas that received a
        result, the mean test ``mean - c > tau + c`` or ``mean + c < tau - c``, then the same
        test with ``s`` (observed counts and means)."""
        rows = rows[stats.observed[rows] > stats.n_arms]
        if rows.size == 0:
            return
        n = np.maximum(stats.counts[rows], 1)
        means, tau = stats.means[rows], self.threshold
        _, _, mean_term = self._code_constants(rows)
        c = np.sqrt(mean_term / n)
        mean_test = (means - c > tau + c) | (means + c < tau - c)
        s = self._code_radius(stats, stats.counts[rows], rows)
        variance_test = (means - s > tau + s) | (means + s < tau - s)
        stats.active[rows] &= ~((stats.counts[rows] > 0) & (mean_test | variance_test))

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
        if not self.authors_code:
            self._negated_key.refresh_rows(stats, rows)  # every radius shrank

    def key_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """``|mean_i - tau| - 2 s_i`` (selection width over pulls); eliminated arms get +inf."""
        counts, pulls, means = gathered(stats, flat)
        radius = self._radius(self.eps[rows], stats.m2.reshape(-1)[flat], counts, pulls)
        key = np.abs(means - self.threshold) - 2.0 * radius
        return np.where(stats.active.reshape(-1)[flat], key, np.inf)

    def key(self, stats: ArmStats) -> np.ndarray:
        return self._code_key(stats) if self.authors_code else super().key(stats)

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.authors_code:
            return self._code_select(stats)
        self._advance(stats)
        index = self._negated_key.current(stats)  # eliminated arms at -inf
        rng = self.rng if self.params.tie_break == "random" else None
        if self._warmup.all_warm(stats):
            arms = argmax(index, rng, stats.dispatched)
        else:
            arms = select_by_index(stats, index, need=1, rng=rng)
        return np.where(stats.active.any(axis=1), arms, STOPPED)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        """Eliminate every arm of ``B`` with ``|mean - tau| > 2 s`` (observed counts), from t = K + 1."""
        if self.authors_code:
            self._code_eliminate(stats, rows)
            return
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
