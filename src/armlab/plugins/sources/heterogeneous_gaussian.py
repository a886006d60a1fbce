"""The synthetic Gaussian bandit with heterogeneous variances of Lalitha et al. (2023, section 5.1).

Arm i (1-based) of K: ``mu_i = 1 - sqrt((i - 1) / K)``; ``sigma_i^2 = 0.9 mu_i^2 + 0.1`` for
even i and ``0.1`` for odd i.  Every stage of sequential halving then holds both high- and
low-variance arms.  The paper perturbs the instance with additive ``N(0, 0.05^2)`` noise on the
means and a multiplicative ``U(0.5, 1.5)`` factor on the variances; the factor applies to the
variance computed from the *unperturbed* mean, and a new instance is drawn in every run
(docs/algorithms/sources.md).  Rewards are ``N(mu_i, sigma_i^2)``.

:func:`heterogeneous_variance_targets` is the generator on its own, for other sources that start from the
same targets (the MovieLens replay of the paper's section 5.2 matches movies to them).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from scipy import special

from armlab.plugins.interfaces import PluginParams, RewardSource
from armlab.problem import Truth
from armlab.random import KeyedRandom

__all__ = ["Parity", "HeterogeneousVarianceGaussian", "heterogeneous_variance_base", "heterogeneous_variance_targets"]


#: Which arms (1-based parity) get the high variance ``0.9 mu_i^2 + 0.1``.
Parity = Literal["even", "odd"]


def heterogeneous_variance_base(n_arms: int, high_variance_arms: Parity = "even") -> tuple[np.ndarray, np.ndarray]:
    """The unperturbed means and variances ``(K,)`` of the paper's K-armed instance."""
    arm = np.arange(1, n_arms + 1)
    means = 1.0 - np.sqrt((arm - 1) / n_arms)
    high = arm % 2 == (0 if high_variance_arms == "even" else 1)
    variances = np.where(high, 0.9 * means**2 + 0.1, 0.1)
    return means, variances


def heterogeneous_variance_targets(
    rng: KeyedRandom,
    n_arms: int,
    mean_sd: float = 0.05,
    variance_factor: tuple[float, float] = (0.5, 1.5),
    high_variance_arms: Parity = "even",
) -> tuple[np.ndarray, np.ndarray]:
    """Perturbed means and variances ``(R, K)``, one instance per replica of ``rng``.

    ``mu_i + mean_sd * Z`` with Z standard normal (step 0 of ``rng``) and
    ``sigma_i^2 * U(variance_factor)`` (step 1), so each replica's instance depends only on
    its key.
    """
    means, variances = heterogeneous_variance_base(n_arms, high_variance_arms)
    low, high = variance_factor
    factor = low + (high - low) * rng.uniform(1, n_arms)
    return means + mean_sd * rng.normal(0, n_arms), variances * factor


class HeterogeneousVarianceGaussianParams(PluginParams):
    n_arms: int = Field(ge=2, description="number of arms K (sweep source.n_arms for error vs K)")
    perturbation: Literal["per-run", "once", "none"] = Field(
        "per-run",
        description="per-run: a new perturbed instance in every replica (the paper's runs); once: one "
        "perturbed instance shared by all replicas (as in the paper's Fig. 1); none: the base instance",
    )
    mean_sd: float = Field(0.05, ge=0, description="standard deviation of the additive noise on the means")
    variance_factor: tuple[float, float] = Field(
        (0.5, 1.5), description="the variances are multiplied by a factor drawn uniformly on [low, high]"
    )

    high_variance_arms: Parity = Field(
        "even",
        description="1-based parity of the arms with variance 0.9 mu^2 + 0.1 (the others get 0.1): even as "
        "the paper writes it (docs/algorithms/sources.md); odd gives the best arm the high variance, as 0-based code testing "
        "i % 2 == 0 would (this variant reproduces the paper's reported ordering, see examples/heterogeneous_variances)",
    )

    @model_validator(mode="after")
    def _check(self) -> HeterogeneousVarianceGaussianParams:
        low, high = self.variance_factor
        if not 0 < low <= high:
            raise ValueError(f"variance_factor must satisfy 0 < low <= high, got {list(self.variance_factor)}")
        return self


class HeterogeneousVarianceGaussian(RewardSource):
    """The heterogeneous-variance paper's Gaussian bandit (section 5.1, Figs. 1-3): means ``1 - sqrt((i-1)/K)``,
    variances ``0.9 mu_i^2 + 0.1`` (even arms) or ``0.1`` (odd arms), perturbed per run.

    The instance of replica r is drawn from the keyed generator of (seed, bandit, r), so every
    policy meets the same instances and the same k-th reward of each arm.  The best arm is the
    argmax of the perturbed means (arm 1 in most draws); error metrics use it.
    """

    name = "heterogeneous-gaussian"
    Params = HeterogeneousVarianceGaussianParams

    @property
    def n_arms(self) -> int:
        return self.params.n_arms

    def truth_for(self, rng: KeyedRandom) -> Truth:
        p, replicas = self.params, rng.replicas.size
        if p.perturbation == "none":
            base = heterogeneous_variance_base(p.n_arms, p.high_variance_arms)
            means, variances = (np.broadcast_to(a, (replicas, p.n_arms)) for a in base)
        else:
            if p.perturbation == "once":
                rng = KeyedRandom(*rng.words, "shared-instance", replicas=np.zeros(1, dtype=np.int64))
            means, variances = heterogeneous_variance_targets(rng, p.n_arms, p.mean_sd, p.variance_factor, p.high_variance_arms)
            means, variances = (np.broadcast_to(a, (replicas, p.n_arms)) for a in (means, variances))
        self._flat_means = np.ascontiguousarray(means).reshape(-1)
        self._flat_sd = np.sqrt(variances).reshape(-1)
        return Truth(means=means, variances=variances)

    def rewards_from_uniforms(self, rows, arms, u) -> np.ndarray:
        flat = rows * self.n_arms + arms
        return self._flat_means[flat] + self._flat_sd[flat] * special.ndtri(u)
