"""Thompson sampling: Beta-Bernoulli (Agrawal & Goyal 2012) or Gaussian prior (Agrawal & Goyal 2013)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from armlab.errors import ConfigError
from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins._fast.normal_draw_argmax import argmax_of_normal_draws
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.propensity import PROPENSITY_DRAWS, Propensities, sampled_shares
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class ThompsonParams(PluginParams):
    prior: Literal["beta", "gaussian"] = Field(
        "beta",
        description="beta: Beta(1, 1) prior, Bernoulli likelihood (rewards in [0, 1]); gaussian: N(0, 1) prior, "
        "Gaussian likelihood of known variance `variance` (any real rewards)",
    )
    variance: float = Field(
        1.0,
        gt=0,
        description="gaussian prior only: the noise variance s2 the likelihood assumes; the posterior draw is "
        "N(S_i / (n_i + s2), s2 / (n_i + s2)). 1.0 (default): the unit-variance rule of Agrawal & Goyal (2013)",
    )

    @model_validator(mode="after")
    def _variance_needs_the_gaussian_prior(self) -> ThompsonParams:
        if self.prior != "gaussian" and self.variance != 1.0:
            raise ValueError('variance is the noise variance of the gaussian prior; set prior = "gaussian" to use it')
        return self


class Thompson(Policy):
    """Thompson sampling: draw one posterior sample ``theta_i`` per arm, pull ``argmax theta``.

    ``prior = "beta"`` (Agrawal & Goyal 2012, Alg. 1-2): ``theta_i ~ Beta(S_i + 1, F_i + 1)``
    from successes and failures.  Rewards in [0, 1] that are not binary are turned into a
    Bernoulli(r) success first (their Algorithm 2), with a seeded uniform keyed by (replica,
    arm, pull); sources whose rewards can leave [0, 1] are refused at reset.

    ``prior = "gaussian"``: ``theta_i ~ N(S_i / (k_i + s2), s2 / (k_i + s2))`` with ``k_i``
    observed pulls, ``S_i`` their reward sum and ``s2 = variance``: the posterior under a
    N(0, 1) prior and Gaussian noise of known variance ``s2``.

    * ``variance = 1.0`` (default): ``N(S_i / (k_i + 1), 1 / (k_i + 1))``, the rule of Agrawal
      & Goyal (AISTATS 2013), which assumes unit variance whatever the true one.  On rewards
      with a much smaller noise (sd 0.2, say) its draws are five times too wide and it
      explores far too long.
    * ``variance = s2``: the known-variance rule; set it to the rewards' true noise variance
      (e.g. 0.04 for sd 0.2).  ``variance`` needs ``prior = "gaussian"``.

    Rewards are used raw.  The posterior means and standard deviations are kept by an
    :class:`~armlab.plugins._fast.arm_terms.ArmTerms`; the argmax of the draws is
    :func:`~armlab.plugins._fast.normal_draw_argmax.argmax_of_normal_draws`, which turns only
    the draws that can win into normals.

    Both: no forced initial pulls; anytime; posterior draws are keyed by (seed, replica,
    decision index); pending pulls are simply not in the posterior yet.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    name = "thompson"
    Params = ThompsonParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        shape = (replicas, problem.n_arms)
        if self.params.prior == "gaussian":
            self._posterior = ArmTerms(replicas, problem.n_arms, mean=self.posterior_mean, sd=self.posterior_sd)
            return
        low, high = problem.reward_range
        if low < 0.0 or high > 1.0:
            raise ConfigError(
                f"{self.name}: Beta-Bernoulli Thompson sampling needs rewards in [0, 1], but "
                f"source {problem.source!r} produces rewards in [{low}, {high}]; "
                f'set prior = "gaussian" for unbounded rewards'
            )
        self.successes = np.zeros(shape)
        self.failures = np.zeros(shape)
        self._coin = KeyedRandom(*rng.words, "bernoulli-trial", replicas=rng.replicas)

    def posterior_mean(self, arm: ArmStats) -> np.ndarray:
        """``S_i / (k_i + s2)`` with ``S_i = k_i mean_i`` (Gaussian prior)."""
        k = arm.counts
        return arm.means * (k / (k + self.params.variance))

    def posterior_sd(self, arm: ArmStats) -> np.ndarray:
        """``sqrt(s2 / (k_i + s2))`` (Gaussian prior)."""
        s2 = self.params.variance
        return np.sqrt(s2) / np.sqrt(arm.counts + s2)

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.prior == "gaussian":
            posterior = self._posterior.current(stats)
            return argmax_of_normal_draws(self.rng, stats.dispatched, posterior.mean, posterior.sd, stats.active)
        theta = self.rng.beta(stats.dispatched, self.successes + 1.0, self.failures + 1.0)
        return np.argmax(np.where(stats.active, theta, -1.0), axis=1)

    def propensities(self, stats: ArmStats, chosen: np.ndarray | None = None) -> Propensities:
        """Estimated: the share of :data:`~armlab.plugins.propensity.PROPENSITY_DRAWS` posterior
        draws (keys ``"propensity"`` and the draw's number) in which each arm is the largest,
        the decision made (``chosen``, else selected again) counting as one more draw; all draws
        in one vectorized pass."""
        draws = PROPENSITY_DRAWS
        chosen = self.select(stats) if chosen is None else chosen
        picks = np.empty((stats.replicas, draws), dtype=np.int64)
        for row in range(stats.replicas):
            rng = KeyedRandom(*self.rng.words, "propensity", int(self.rng.replicas[row]), replicas=np.arange(draws))
            active = np.broadcast_to(stats.active[row], (draws, stats.n_arms))
            if self.params.prior == "gaussian":
                posterior = self._posterior.current(stats)
                theta = posterior.mean[row] + posterior.sd[row] * rng.normal(int(stats.dispatched[row]), stats.n_arms)
                picks[row] = np.argmax(np.where(active, theta, -np.inf), axis=1)
            else:
                shape = (draws, stats.n_arms)
                theta = rng.beta(int(stats.dispatched[row]), np.broadcast_to(self.successes[row] + 1.0, shape),
                                 np.broadcast_to(self.failures[row] + 1.0, shape))
                picks[row] = np.argmax(np.where(active, theta, -1.0), axis=1)
        return sampled_shares(chosen, picks, stats.n_arms), draws

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        if self.params.prior == "gaussian":
            self._posterior.observed(stats, rows, arms)
            return
        binary = (rewards == 0.0) | (rewards == 1.0)
        success = rewards == 1.0
        if not binary.all():
            coin = self._coin.uniform(stats.counts[rows, arms] * stats.n_arms + arms, 1, rows=rows)[:, 0]
            success = np.where(binary, success, coin < rewards)
        self.successes[rows, arms] += success
        self.failures[rows, arms] += ~success
