"""KL-UCB (Garivier & Cappe 2011, "The KL-UCB algorithm for bounded stochastic bandits and beyond")."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins._fast.lazy_argmax import LazyArgmax
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.regret.base import RegretParams, require_budget_for_first_pulls, require_unit_rewards
from armlab.plugins.regret.bounds import BISECTION_TOL, klucb_bernoulli, klucb_bernoulli_slope, klucb_gaussian
from armlab.problem import Objective, Problem
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
    for ``q`` with the vectorized root finder of :mod:`armlab.plugins.regret.bounds`; it
    needs rewards in [0, 1] and refuses other sources at reset (use ``divergence =
    "gaussian"`` there, as the EUCBV paper's Experiment 2 does).  ``divergence = "gaussian"``
    is the closed form ``mean + sqrt(2 variance f(n) / N_i)``, which with variance 1 and
    c = 0 equals UCB1's index; it takes any real rewards.  Anytime.  Pending pulls: as every
    index policy.  Deviation: Newton is the default root finder (it agrees with the
    bisection within its 1e-6 tolerance).

    Once every arm is warm, the Bernoulli index is maximised by a
    :class:`~armlab.plugins._fast.lazy_argmax.LazyArgmax` at level ``f(n)``: the root is
    concave in the level, so only the arms that can win are solved at each step, and the arm
    chosen is the argmax of the index.
    """

    name = "klucb"
    Params = KLUCBParams
    objectives = frozenset({Objective.REGRET})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_budget_for_first_pulls(problem, self.name)
        if self.params.divergence == "bernoulli":
            require_unit_rewards(problem, self.name, 'set divergence = "gaussian" for unbounded rewards')
            # the root's numerical error (Newton < 1e-10, bisection < its tolerance) stays below the slack
            slack = 1e-8 if self.params.solver == "newton" else 4 * BISECTION_TOL
            self._lazy_argmax = LazyArgmax(self._index_and_slope_at, replicas, problem.n_arms, slack)
        else:
            self._terms = ArmTerms(replicas, problem.n_arms, sqrt_inv_n=lambda arm: np.sqrt(1.0 / arm.counts))
        self._stats: ArmStats | None = None  # the statistics and level of the step being selected
        self._level = np.zeros(replicas)

    def exploration(self, stats: ArmStats) -> np.ndarray:
        """``f(n)`` per replica ``(R,)``."""
        log_n = np.log(np.maximum(stats.observed, 1).astype(np.float64))
        return log_n + self.params.c * np.log(np.maximum(log_n, 1.0))

    def index(self, stats: ArmStats) -> np.ndarray:
        f = self.exploration(stats)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
            if self.params.divergence == "gaussian":
                return klucb_gaussian(stats.means, f, self.params.variance, stats.counts)
            return klucb_bernoulli(stats.means, f * (1.0 / stats.counts), self.params.solver)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        if self.params.divergence == "gaussian":  # mean_i + sqrt(2 variance f(n)) sqrt(1 / N_i)
            root = np.sqrt(2.0 * self.params.variance * np.maximum(self.exploration(stats), 0.0))
            return self._terms.mean_plus(stats, sqrt_inv_n=root)
        return self.index(stats)  # the Bernoulli index while some arm warms up (then: select)

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.divergence == "bernoulli" and self._warm_arms.ready(stats):
            # every arm warm and active: the argmax of the index at level f(n), solving few arms
            self._stats, self._level = stats, self.exploration(stats)
            return self._lazy_argmax.select(self._level, self.tie_rng(), stats.dispatched)
        return super().select(stats)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        if self.params.divergence == "bernoulli":
            self._lazy_argmax.observed(stats, rows, arms)
        else:
            self._terms.observed(stats, rows, arms)

    def _index_and_slope_at(self, rows: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Bernoulli index at flat positions, and its derivative in the level ``f(n)``."""
        assert self._stats is not None
        p = self._stats.means.reshape(-1)[flat]
        per_pull = 1.0 / self._stats.counts.reshape(-1)[flat]  # 1 / N_i
        q = klucb_bernoulli(p, self._level[rows] * per_pull, self.params.solver)
        return q, klucb_bernoulli_slope(p, q, per_pull)
