"""Bayes-UCB (Kaufmann, Cappe & Garivier 2012, "On Bayesian upper confidence bounds for bandit problems")."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins._fast.lazy_argmax import LazyArgmax
from armlab.plugins.regret.base import (
    IndexPolicy,
    RegretParams,
    decision_index,
    require_unit_rewards,
)
from armlab.plugins.regret.bounds import (
    beta_quantile_slope,
    beta_upper_quantile,
    gaussian_upper_quantile,
)
from armlab.plugins.selection import argmax_random_ties
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["BayesUCB"]

_BELOW_ONE = np.nextafter(1.0, 0.0)


class BayesUCBParams(RegretParams):
    posterior: Literal["beta", "gaussian"] = Field(
        "beta",
        description="beta: Beta(1 + S, 1 + N - S) from a uniform prior (rewards in [0, 1]); "
        "gaussian: N(mean, variance / N) from a flat prior with known noise variance",
    )
    c: float = Field(0.0, ge=0, description="quantile level 1 - 1 / (t (log T)^c); theory c >= 5, practice 0 (anytime)")
    variance: float = Field(1.0, gt=0, description="known noise variance of the gaussian posterior")


class BayesUCB(IndexPolicy):
    """Bayes-UCB: pull the arm whose posterior has the largest ``1 - 1/(t (log T)^c)`` quantile.

    Source: docs/algorithms/regret.md; ``t`` is the decision index.  ``posterior = "beta"``:
    uniform prior, posterior Beta(1 + S_j, 1 + N_j - S_j) with ``S_j`` the reward sum, its
    quantile from scipy's ``betainccinv`` (upper tail, accurate near level 1); no forced
    pulls (at ``t = 1`` every index is 0 and the tie-break picks); needs rewards in [0, 1]
    and refuses other sources at reset (non-binary rewards in [0, 1] enter ``S`` as they
    are).  ``posterior = "gaussian"``: flat prior and known noise variance, index
    ``mean_j + sqrt(variance / N_j) Phi^-1(level)``, one initial pull of each arm; any
    real rewards.  Needs the horizon only when ``c > 0``.  Pending pulls: not in the
    posterior; the Beta variant may pull an arm again while its result is in flight, the
    Gaussian one first waits for each arm's first result (as every index policy).

    The Beta quantile is concave in ``log(1 / tail)`` (a log-concave density), so it is kept
    as tangent upper bounds and only the arms that can win are recomputed at each step
    (:class:`~armlab.plugins._fast.lazy_argmax.LazyArgmax`); the arm chosen is
    the same as when every quantile is computed.
    """

    name = "bayes-ucb"
    Params = BayesUCBParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        if self.params.posterior == "beta":
            require_unit_rewards(problem, self.name, 'set posterior = "gaussian" for unbounded rewards')
        self.log_horizon_c = np.log(problem.budget) ** self.params.c if self.params.c > 0 else 1.0
        self.sd = np.zeros((replicas, problem.n_arms))
        self._lazy = LazyArgmax(self._quantile_at, replicas, problem.n_arms, slack=1e-8)
        self._stats: ArmStats | None = None
        self._tail = np.ones(replicas)

    def pulls_each_arm_first(self) -> bool:
        return self.params.posterior == "gaussian"

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        self.sd[rows, arms] = math.sqrt(self.params.variance) * self.inv_sqrt_n[rows, arms]
        if self.params.posterior == "beta":
            self._lazy.invalidate(stats, rows, arms)

    def tail(self, stats: ArmStats) -> np.ndarray:
        """``1 - level = 1 / (t (log T)^c)`` per replica ``(R,)``, kept below 1 so quantiles
        stay finite (level 0 occurs only at ``t = 1``, where every arm ties anyway)."""
        return np.minimum(1.0 / (decision_index(stats) * self.log_horizon_c), _BELOW_ONE)

    def index(self, stats: ArmStats) -> np.ndarray:
        tail = self.tail(stats)[:, None]
        if self.params.posterior == "gaussian":
            return gaussian_upper_quantile(stats.means, self.sd, tail)
        successes = stats.means * stats.counts
        return beta_upper_quantile(1.0 + successes, 1.0 + stats.counts - successes, tail)

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.posterior == "gaussian":
            return super().select(stats)
        rng = self.rng if self.params.tie_break == "random" else None
        if stats.active.all():
            self._stats, self._tail = stats, self.tail(stats)
            return self._lazy.select(-np.log(self._tail), rng, stats.dispatched)
        index = np.where(stats.active, self.index(stats), -np.inf)
        return np.argmax(index, axis=1) if rng is None else argmax_random_ties(index, rng, stats.dispatched)

    def _quantile_at(self, rows: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Beta index at flat positions, and its derivative in ``log(1 / tail)``."""
        assert self._stats is not None
        counts = self._stats.counts.reshape(-1)[flat]
        successes = self._stats.means.reshape(-1)[flat] * counts
        a, b, tail = 1.0 + successes, 1.0 + counts - successes, self._tail[rows]
        q = beta_upper_quantile(a, b, tail)
        return q, beta_quantile_slope(a, b, q, tail)
