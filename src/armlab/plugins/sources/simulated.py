"""Simulated Gaussian and Bernoulli arms."""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator
from scipy import special

from armlab.plugins.interfaces import PluginParams, RewardSource
from armlab.problem import Truth
from armlab.random import KeyedRandom


class GaussianParams(PluginParams):
    means: list[float] = Field(min_length=2, description="true mean of each arm")
    variances: list[float] | float = Field(
        1.0, description="variance of each arm (a list as long as means, or one number for all)"
    )

    @model_validator(mode="after")
    def _check(self) -> GaussianParams:
        if isinstance(self.variances, list):
            if len(self.variances) != len(self.means):
                raise ValueError(
                    f"variances has {len(self.variances)} entries but means has "
                    f"{len(self.means)}; give one variance per arm, or a single number"
                )
            bad = [v for v in self.variances if not v >= 0]
        else:
            bad = [] if self.variances >= 0 else [self.variances]
        if bad:
            raise ValueError(f"variances must be >= 0, got {bad[0]}")
        return self


class Gaussian(RewardSource):
    """Gaussian arms ``N(mu_i, sigma_i^2)``; reward = mean + sd * Phi^-1(u) for the keyed u."""

    name = "gaussian"
    Params = GaussianParams

    @property
    def n_arms(self) -> int:
        return len(self.params.means)

    def truth_for(self, rng: KeyedRandom) -> Truth:
        k, r = self.n_arms, rng.replicas.size
        variances = self.params.variances
        var = np.full(k, variances) if not isinstance(variances, list) else np.asarray(variances)
        means = np.broadcast_to(np.asarray(self.params.means, dtype=np.float64), (r, k))
        self._mean_of_arm = np.asarray(self.params.means, dtype=np.float64)
        self._sd_of_arm = np.sqrt(var)
        return Truth(means=means, variances=np.broadcast_to(var, (r, k)))

    def rewards_from_uniforms(self, rows, arms, u) -> np.ndarray:
        # the same arms in every replica: gather by arm only
        return self._mean_of_arm[arms] + self._sd_of_arm[arms] * special.ndtri(u)


class BernoulliParams(PluginParams):
    means: list[float] = Field(min_length=2, description="success probability of each arm")

    @model_validator(mode="after")
    def _check(self) -> BernoulliParams:
        bad = [m for m in self.means if not 0.0 <= m <= 1.0]
        if bad:
            raise ValueError(f"means are probabilities and must lie in [0, 1], got {bad[0]}")
        return self


class Bernoulli(RewardSource):
    """Bernoulli arms: reward 1 when the keyed uniform falls below the arm's mean, else 0."""

    name = "bernoulli"
    Params = BernoulliParams
    reward_range = (0.0, 1.0)

    @property
    def n_arms(self) -> int:
        return len(self.params.means)

    def truth_for(self, rng: KeyedRandom) -> Truth:
        k, r = self.n_arms, rng.replicas.size
        p = self._p = np.asarray(self.params.means, dtype=np.float64)
        return Truth(means=np.broadcast_to(p, (r, k)), variances=np.broadcast_to(p * (1 - p), (r, k)))

    def rewards_from_uniforms(self, rows, arms, u) -> np.ndarray:
        return (u < self._p[arms]).astype(np.float64)
