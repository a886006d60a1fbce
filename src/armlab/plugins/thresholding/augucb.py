"""AugUCB, Augmented UCB for thresholding bandits (Mukherjee et al., IJCAI 2017, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins._fast.arms_to_retest import ArmsToRetest
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.thresholding._common import (
    ArmView,
    ArmwiseKeyPolicy,
    IndexParams,
    Variant,
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
    """AugUCB's round constants, radius and elimination test as Algorithm 1 prints them,
    for budget ``T``, ``K`` arms and ``rho`` (natural logs; ``eps = 2^-m`` in round ``m``)."""

    budget: int
    n_arms: int
    rho: float = 1.0 / 3.0
    #: the selection key is ``|mean_i - tau| - key_radii s_i``
    key_radii: float = 2.0

    @property
    def a_constant(self) -> float:
        """``A = ln((3/16) K ln K)``."""
        k = self.n_arms
        return math.log(3.0 / 16.0 * k * math.log(k))

    @property
    def last_round(self) -> int:
        """``M = floor(log2(T / e) / 2)``: rounds start while ``m <= M``."""
        return math.floor(0.5 * math.log2(self.budget / math.e))

    def psi(self, eps: np.ndarray) -> np.ndarray:
        """``psi = T eps / (128 A^2)``."""
        return self.budget * eps / (128.0 * self.a_constant**2)

    def log_term(self, eps: np.ndarray) -> np.ndarray:
        """``ln(T eps)``."""
        return np.log(self.budget * eps)

    def ell(self, eps: np.ndarray) -> np.ndarray:
        """``ell = ceil(2 psi ln(T eps) / eps)``, pulls per active arm in the round."""
        return np.ceil(2.0 * self.psi(eps) * self.log_term(eps) / eps).astype(np.int64)

    def radius(self, eps: np.ndarray, v: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``s_i = sqrt(rho psi (v_i + 1) ln(T eps) / (4 n_i))`` (``n_i = 0`` read as 1)."""
        coefficient = self.rho * self.psi(eps) * self.log_term(eps) / 4.0
        return np.sqrt(coefficient * (v + 1.0) / np.maximum(n, 1))

    def eliminated(self, eps: np.ndarray, means: np.ndarray, v: np.ndarray, n: np.ndarray, tau: float) -> np.ndarray:
        """``mean_i + s_i < tau - s_i`` or ``mean_i - s_i > tau + s_i``, i.e. ``|mean_i - tau| > 2 s_i``."""
        return np.abs(means - tau) > 2.0 * self.radius(eps, v, n)


@dataclass(frozen=True)
class AuthorsCodeSchedule(AugUCBSchedule):
    """The same as the authors' code runs them (their ``AugmentedUCBV2``): ``M``, ``eps`` and
    ``ell`` as printed, with their ``psi``, their radius and a second elimination test."""

    def psi(self, eps: np.ndarray) -> np.ndarray:
        """``psi = T eps / (K ln K)`` (no ``A``)."""
        return self.budget * eps / (self.n_arms * math.log(self.n_arms))

    def radius(self, eps: np.ndarray, v: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``s_i = sqrt(rho v_i psi ln(T eps) / (4 n_i) + rho ln(psi T eps) / (4 n_i))``."""
        psi = self.psi(eps)
        variance_term = self.rho * psi * self.log_term(eps) / 4.0
        constant_term = self.rho * np.log(psi * self.budget * eps) / 4.0
        return np.sqrt((variance_term * v + constant_term) / np.maximum(n, 1))

    def mean_radius(self, eps: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``c_i = sqrt(rho_mu psi ln(T eps) / (2 n_i))``, ``rho_mu = 1/8``, of the mean test."""
        return np.sqrt(AUTHORS_RHO_MEAN * self.psi(eps) * self.log_term(eps) / 2.0 / np.maximum(n, 1))

    def eliminated(self, eps: np.ndarray, means: np.ndarray, v: np.ndarray, n: np.ndarray, tau: float) -> np.ndarray:
        """The mean test with ``c_i`` (:meth:`mean_radius`) or the same test with ``s_i``:
        ``mean_i - c_i > tau + c_i`` or ``mean_i + c_i < tau - c_i``."""
        c = self.mean_radius(eps, n)
        s = self.radius(eps, v, n)
        return (means - c > tau + c) | (means + c < tau - c) | (means - s > tau + s) | (means + s < tau - s)


@dataclass(frozen=True)
class AuthorsCodeV1Schedule(AuthorsCodeSchedule):
    """The authors' earlier code (their ``AugmentedUCB``): a constant ``psi = T / ln K``, every
    logarithm ``L = ln(psi T eps^2)``, the radius with ``rho_v = 2 rho`` (2/3 at the default
    ``rho = 1/3``) counted once in the selection key; ``M``, ``eps``, rounds and the two
    elimination tests as in :class:`AuthorsCodeSchedule`."""

    key_radii: float = 1.0

    def psi(self, eps: np.ndarray) -> np.ndarray:
        """``psi = T / ln K``, the same in every round."""
        return np.full(np.shape(eps), self.budget / math.log(self.n_arms))

    def log_term(self, eps: np.ndarray) -> np.ndarray:
        """``L = ln(psi T eps^2)``."""
        return np.log(self.psi(eps) * self.budget * eps**2)

    def ell(self, eps: np.ndarray) -> np.ndarray:
        """``n_m = ceil(2 L / eps)``, pulls per active arm in the round."""
        return np.ceil(2.0 * self.log_term(eps) / eps).astype(np.int64)

    def radius(self, eps: np.ndarray, v: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``s_i = sqrt(rho_v v_i L / (4 n_i) + rho_v L / (4 n_i))``, ``rho_v = 2 rho``."""
        coefficient = 2.0 * self.rho * self.log_term(eps) / 4.0
        return np.sqrt((coefficient * v + coefficient) / np.maximum(n, 1))

    def mean_radius(self, eps: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``c_i = sqrt(rho_mu L / (2 n_i))``, ``rho_mu = 1/8``."""
        return np.sqrt(AUTHORS_RHO_MEAN * self.log_term(eps) / 2.0 / np.maximum(n, 1))


#: AugUCB's variants: the two of every policy of the family, and the authors' earlier code
AugUCBVariant = Literal[Variant, "authors-code-v1"]
_VARIANT = variant_field(
    "Algorithm 1 as printed",
    "psi = T eps / (K ln K), the radius s_i = sqrt(rho v psi ln(T eps) / (4n) + rho ln(psi T eps) / (4n)) "
    "and an extra mean-only elimination test with rho = 1/8",
)
#: each variant's constants, radius and tests
SCHEDULES: dict[str, type[AugUCBSchedule]] = {
    "paper": AugUCBSchedule, "authors-code": AuthorsCodeSchedule, "authors-code-v1": AuthorsCodeV1Schedule,
}


class AugUCBParams(IndexParams):
    rho: float = Field(
        1.0 / 3.0,
        gt=0,
        description="arm-elimination parameter rho (Theorem 3.1 and the paper's experiments: 1/3); in the "
        "authors' code the rho_v of the radius s_i and of the variance test (also 1/3); in their earlier "
        "code rho_v = 2 rho (2/3)",
    )
    variant: AugUCBVariant = Field(
        _VARIANT.default,
        description=_VARIANT.description + '; "authors-code-v1": the authors\' earlier code, psi = T / ln K, '
        "L = ln(psi T eps^2) in place of every logarithm, rho_v = 2 rho, the key |mean - tau| - s_i and "
        "ell = ceil(2 L / eps)",
    )


class AugUCB(ArmwiseKeyPolicy):
    """AugUCB: UCB-Improved-style rounds with variance-aware elimination after every pull.

    Source: Mukherjee, Naveen, Sudarsanam & Ravindran, "Thresholding bandits with augmented
    UCB" (IJCAI 2017), Algorithm 1; every variant step by step in
    docs/algorithms/thresholding.md.  All:

    1. pull every arm once; ``B`` holds every arm, ``m = 0``, ``eps = 1``;
    2. ``ell = ceil(2 psi ln(T eps) / eps)``, the first round ends at ``N = K ell``;
    3. pull ``argmin_{i in B} |mean_i - tau| - 2 s_i`` (:meth:`key`, ``v_i`` the biased
       empirical variance; ``- s_i`` in ``"authors-code-v1"``);
    4. after the pull, eliminate the arms of ``B`` that fail the test (:meth:`update`), from
       ``t = K + 1`` on;
    5. when ``t >= N`` and ``m <= M = floor(log2(T / e) / 2)``: halve ``eps``, recompute
       ``psi`` and ``ell``, ``N <- t + |B| ell``, ``m <- m + 1`` (:meth:`_start_rounds`);
    6. stop when ``B`` is empty (STOPPED; the output stays frozen) or ``t = T``.

    ``psi``, ``s_i`` and the test are each variant's (:class:`AugUCBSchedule`,
    :class:`AuthorsCodeSchedule`, :class:`AuthorsCodeV1Schedule`):

    * ``"paper"`` (default), Algorithm 1 as printed: ``psi = T eps / (128 A^2)`` with
      ``A = ln((3/16) K ln K)``; ``s_i = sqrt(rho psi (v_i + 1) ln(T eps) / (4 n_i))``;
      eliminate each arm of ``B`` with ``|mean_i - tau| > 2 s_i``.  Requires ``K >= 5``
      (``A > 0``).  Choices where the paper is unclear: one time increment per pull, floor
      in ``M``, eliminations and resets from ``t = K + 1``.
    * ``"authors-code"``, the authors' public code (their ``AugmentedUCBV2``):
      ``psi = T eps / (K ln K)``;
      ``s_i = sqrt(rho v_i psi ln(T eps) / (4 n_i) + rho ln(psi T eps) / (4 n_i))``
      (``rho = rho_v = 1/3``); eliminate each arm of ``B`` that fails the mean test with
      ``c_i = sqrt(rho_mu psi ln(T eps) / (2 n_i))``, ``rho_mu = 1/8``
      (``mean_i - c_i > tau + c_i`` or ``mean_i + c_i < tau - c_i``), or the same test
      with ``s_i`` in place of ``c_i``.  At ``T = 10000, K = 100`` round 0 lasts
      ``K ell_0 = 40000`` pulls, i.e. the whole budget.
    * ``"authors-code-v1"``, the authors' earlier code (their ``AugmentedUCB``): as
      ``"authors-code"`` but ``psi = T / ln K`` in every round and, with
      ``L = ln(psi T eps^2)``: ``ell = ceil(2 L / eps)``,
      ``c_i = sqrt(rho_mu L / (2 n_i))``,
      ``s_i = sqrt(rho_v v_i L / (4 n_i) + rho_v L / (4 n_i))`` with ``rho_v = 2 rho``
      (2/3), and the key ``|mean_i - tau| - s_i``.  At ``T = 10000, K = 100`` round 0 lasts
      ``K ell_0 = 3400`` pulls.

    Output: the common rule ``{i : n_i >= 1, mean_i >= tau}`` over all arms.  Assumes
    rewards in [0, 1] (so ``v_i <= 1``); runs on any real rewards.  Requires ``T > K`` and ``K >= 2``.

    Pending pulls: ``t`` counts dispatched pulls (the round schedule), ``n_i`` in the
    selection width counts pulls (observed + pending), while eliminations use observed
    rewards and counts only.  With immediate feedback this is each variant exactly.

    Speed: an arm's verdict changes only when its statistics or its round's constants do,
    so after each result only the arm observed is tested, and every arm of a replica whose
    round just started (:class:`~armlab.plugins._fast.arms_to_retest.ArmsToRetest`).
    """

    name = "augucb"
    Params = AugUCBParams
    objectives = frozenset({Objective.THRESHOLD})
    index_excludes_inactive_arms = True  # arms outside B have key +inf

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        if k < 5 and self.params.variant == "paper":
            raise ConfigError(
                f"{self.name}: needs K >= 5 arms, got K = {k}: A = ln((3/16) K ln K) must be clearly "
                f"positive (K = 4 gives A = 0.04 and absurd round lengths). Use another policy."
            )
        if k < 2:
            raise ConfigError(
                f"{self.name}: needs K >= 2 arms, got K = {k}: psi divides by ln K "
                f'(variant = "{self.params.variant}"). Use another policy.'
            )
        require_budget(self, problem, k, "one initial pull per arm")
        self.threshold = threshold_of(self, problem)
        self.schedule = SCHEDULES[self.params.variant](problem.budget, k, self.params.rho)
        self.round = np.zeros(replicas, dtype=np.int64)  # m
        self.eps = np.ones(replicas)
        self.round_end = np.full(replicas, k * int(self.schedule.ell(np.ones(1))[0]), dtype=np.int64)  # N
        self._to_test = ArmsToRetest(replicas, k)

    def key(self, arm: ArmView) -> np.ndarray:
        """Step 3: ``|mean_i - tau| - 2 s_i``, with ``n_i`` the pulls, on ``B``; ``+inf`` outside."""
        s = self.schedule.radius(arm.per_replica(self.eps), arm.variances(), arm.pulls)
        return np.where(arm.active, np.abs(arm.means - self.threshold) - self.schedule.key_radii * s, np.inf)

    def select(self, stats: ArmStats) -> np.ndarray:
        """Steps 5, 3 and 6: start the rounds due, then pull the arm of ``B`` of lowest key."""
        self._start_rounds(stats)
        return np.where(stats.active.any(axis=1), super().select(stats), STOPPED)

    def update(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Step 4, from ``t = K + 1``: eliminate the arms of ``B`` that fail the test (observed
        counts and means)."""
        started = stats.observed[rows] > stats.n_arms
        tested, flat = self._to_test.after_results(stats, rows[started], arms[started])
        arm = ArmView.at(stats, tested, flat)
        out = (arm.counts > 0) & self.schedule.eliminated(
            arm.per_replica(self.eps), arm.means, arm.variances(), arm.counts, self.threshold)
        stats.active.reshape(-1)[flat] &= ~out
        super().update(stats, rows, arms, rewards)  # the keys of the arms just observed
        if out.any():  # the keys of the arms just eliminated
            self.kept_index.observed(stats, tested[out], flat[out] % stats.n_arms)

    def radius(self, stats: ArmStats, n: np.ndarray) -> np.ndarray:
        """``s_i`` of every arm, ``(R, K)``, with ``n_i = n``."""
        return self.schedule.radius(self.eps[:, None], stats.variances(), n)

    def _start_rounds(self, stats: ArmStats) -> None:
        """Step 5 where ``t >= N`` and ``m <= M`` (and ``B`` is not empty), from ``t = K + 1``."""
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
        remaining = stats.active[rows].sum(axis=1)
        self.round_end[rows] = stats.dispatched[rows] + remaining * self.schedule.ell(self.eps[rows])
        self.kept_index.refresh_rows(stats, rows)  # every radius shrank
        self._to_test.refresh_rows(stats, rows)
