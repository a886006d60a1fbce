"""KL-UCB (Garivier & Cappe 2011, "The KL-UCB algorithm for bounded stochastic bandits and beyond")."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins._fast.lazy_argmax import LazyArgmax
from armlab.plugins.regret.base import IndexPolicy, RegretParams, require_unit_rewards
from armlab.plugins.regret.bounds import (
    BISECTION_TOL,
    klucb_bernoulli,
    klucb_bernoulli_slope,
    klucb_gaussian,
    neg_entropy,
)
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["KLUCB"]


class KLUCBParams(RegretParams):
    divergence: Literal["bernoulli", "gaussian"] = Field(
        "bernoulli", description="bernoulli: rewards in [0, 1]; gaussian: d = (x - y)^2 / (2 variance) (KL-UCB-Gauss)"
    )
    c: float = Field(0.0, ge=0, description="f(n) = log n + c log log n; the theorem uses 3, practice 0 (the default)")
    variance: float = Field(1.0, gt=0, description="known noise variance of the gaussian divergence (pymaBandits: 1)")
    solver: Literal["newton", "bisection"] = Field(
        "newton",
        description="root finder of the bernoulli index: 5 Newton steps (error < 1e-10) or bisection to 1e-6",
    )


class KLUCB(IndexPolicy):
    """KL-UCB: pull ``argmax max{q : N_i d(mean_i, q) <= f(n)}``, ``f(n) = log n + c log log n``.

    Source: docs/algorithms/regret.md.  ``n`` is the number of observed rewards (``t - 1``);
    ``log log n`` is guarded as ``log(max(log n, 1))``.  ``divergence = "bernoulli"`` solves
    for ``q`` with the vectorized root finder of :mod:`armlab.plugins.regret.bounds` (cached
    ``p log p + (1-p) log(1-p)`` per arm); it needs rewards in [0, 1] and refuses other
    sources at reset (use ``divergence = "gaussian"`` there, as the EUCBV paper's Experiment 2 does).
    ``divergence = "gaussian"`` is the closed form ``mean + sqrt(2 variance f(n) / N_i)``,
    which with variance 1 and c = 0 equals UCB1's index; it takes any real rewards.  Anytime.
    Pending pulls: as every index policy.  Deviation: Newton is the default root finder
    (it agrees with the bisection within its 1e-6 tolerance and is faster).

    Once every arm has a result, the Bernoulli index is kept as tangent upper bounds in
    ``f(n)`` (the root is concave in it) and only the arms that can win are solved at each
    step (:class:`~armlab.plugins._fast.lazy_argmax.LazyArgmax`); the arm chosen
    is the same as when every index is solved.
    """

    name = "klucb"
    Params = KLUCBParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        if self.params.divergence == "bernoulli":
            require_unit_rewards(problem, self.name, 'set divergence = "gaussian" for unbounded rewards')
        self.entropy = np.full((replicas, problem.n_arms), neg_entropy(0.0))
        # the root's numerical error (Newton < 1e-10, bisection < its tolerance) stays below the slack
        slack = 1e-8 if self.params.solver == "newton" else 4 * BISECTION_TOL
        self._lazy = LazyArgmax(self._solve_at, replicas, problem.n_arms, slack)
        self._stats: ArmStats | None = None
        self._f = np.zeros(replicas)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        if self.params.divergence == "bernoulli":
            self.entropy[rows, arms] = neg_entropy(stats.means[rows, arms])
            self._lazy.invalidate(stats, rows, arms)

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.divergence == "gaussian" or not self._warmup.ready(stats):
            return super().select(stats)
        self._stats, self._f = stats, self.exploration(stats)
        rng = self.rng if self.params.tie_break == "random" else None
        return self._lazy.select(self._f, rng, stats.dispatched)

    def _solve_at(self, rows: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Bernoulli index at flat positions, and its derivative in ``f(n)``."""
        assert self._stats is not None
        p = self._stats.means.reshape(-1)[flat]
        inv_n = self.inv_n.reshape(-1)[flat]
        q = klucb_bernoulli(p, self._f[rows] * inv_n, self.params.solver, self.entropy.reshape(-1)[flat])
        return q, klucb_bernoulli_slope(p, q, inv_n)

    def exploration(self, stats: ArmStats) -> np.ndarray:
        """``f(n)`` per replica ``(R,)``."""
        log_n = np.log(np.maximum(stats.observed, 1).astype(np.float64))
        return log_n + self.params.c * np.log(np.maximum(log_n, 1.0))

    def index(self, stats: ArmStats) -> np.ndarray:
        f = self.exploration(stats)[:, None]
        if self.params.divergence == "gaussian":
            return klucb_gaussian(stats.means, f, self.params.variance, self.inv_sqrt_n)
        return klucb_bernoulli(stats.means, f * self.inv_n, self.params.solver, self.entropy)
