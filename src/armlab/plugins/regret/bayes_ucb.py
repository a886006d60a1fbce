"""Bayes-UCB (Kaufmann, Cappe & Garivier 2012, "On Bayesian upper confidence bounds for bandit problems")."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field
from scipy import special

from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins._fast.lazy_argmax import LazyArgmax
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.regret.base import (
    RegretParams,
    decision_index,
    require_budget_for_first_pulls,
    require_unit_rewards,
)
from armlab.plugins.regret.bounds import beta_quantile_slope, beta_upper_quantile, gaussian_upper_quantile
from armlab.problem import Objective, Problem
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

    Once every arm is active, the Beta index is maximised by a
    :class:`~armlab.plugins._fast.lazy_argmax.LazyArgmax` at level ``log(1 / tail)``: the
    quantile is concave in it (a log-concave density), so only the arms that can win are
    computed at each step, and the arm chosen is the argmax of the index.
    """

    name = "bayes-ucb"
    Params = BayesUCBParams
    objectives = frozenset({Objective.REGRET})

    @property
    def need(self) -> int:  # type: ignore[override]
        """Observed results of each arm before its index is read: one with the Gaussian
        posterior, none with the Beta posterior (no forced pulls)."""
        return 1 if self.params.posterior == "gaussian" else 0

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        if self.params.posterior == "gaussian":
            require_budget_for_first_pulls(problem, self.name)
            self._terms = ArmTerms(replicas, problem.n_arms, sd=self._posterior_sd)
        else:
            require_unit_rewards(problem, self.name, 'set posterior = "gaussian" for unbounded rewards')
            self._lazy_argmax = LazyArgmax(self._quantile_and_slope_at, replicas, problem.n_arms, slack=1e-8)
        self.log_horizon_c = np.log(problem.budget) ** self.params.c if self.params.c > 0 else 1.0
        self._stats: ArmStats | None = None  # the statistics and tail of the step being selected
        self._tail = np.ones(replicas)

    def tail(self, stats: ArmStats) -> np.ndarray:
        """``1 - level = 1 / (t (log T)^c)`` per replica ``(R,)``, kept below 1 so quantiles
        stay finite (level 0 occurs only at ``t = 1``, where every arm ties anyway)."""
        return np.minimum(1.0 / (decision_index(stats) * self.log_horizon_c), _BELOW_ONE)

    def index(self, stats: ArmStats) -> np.ndarray:
        tail = self.tail(stats)[:, None]
        if self.params.posterior == "gaussian":
            with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
                return gaussian_upper_quantile(stats.means, self._posterior_sd(stats), tail)
        successes = stats.means * stats.counts
        return beta_upper_quantile(1.0 + successes, 1.0 + stats.counts - successes, tail)

    def _posterior_sd(self, arm: ArmStats) -> np.ndarray:
        """``sqrt(variance / N_j)``, the Gaussian posterior's standard deviation."""
        return math.sqrt(self.params.variance) * np.sqrt(1.0 / arm.counts)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        if self.params.posterior == "gaussian":  # mean_j + sd_j Phi^-1(1 - tail) = mean_j - sd_j Phi^-1(tail)
            return self._terms.mean_plus(stats, sd=-special.ndtri(self.tail(stats)))
        return self.index(stats)  # the Beta index while some arm is inactive (else: select)

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.posterior == "beta" and self._warm_arms.ready(stats):
            # every arm active: the argmax of the index at level log(1 / tail), computing few arms
            self._stats, self._tail = stats, self.tail(stats)
            return self._lazy_argmax.select(-np.log(self._tail), self.tie_rng(), stats.dispatched)
        return super().select(stats)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        if self.params.posterior == "beta":
            self._lazy_argmax.observed(stats, rows, arms)
        else:
            self._terms.observed(stats, rows, arms)

    def _quantile_and_slope_at(self, rows: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Beta index at flat positions, and its derivative in the level ``log(1 / tail)``."""
        assert self._stats is not None
        counts = self._stats.counts.reshape(-1)[flat]
        successes = self._stats.means.reshape(-1)[flat] * counts
        a, b, tail = 1.0 + successes, 1.0 + counts - successes, self._tail[rows]
        q = beta_upper_quantile(a, b, tail)
        return q, beta_quantile_slope(a, b, q, tail)
