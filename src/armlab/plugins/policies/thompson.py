"""Thompson sampling: Beta-Bernoulli (Agrawal & Goyal 2012) or Gaussian prior (Agrawal & Goyal 2013)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class ThompsonParams(PluginParams):
    prior: Literal["beta", "gaussian"] = Field(
        "beta",
        description="beta: Beta(1, 1) prior, Bernoulli likelihood (rewards in [0, 1]); gaussian: N(0, 1) prior, "
        "unit-variance Gaussian likelihood (any real rewards)",
    )


class Thompson(Policy):
    """Thompson sampling: draw one posterior sample ``theta_i`` per arm, pull ``argmax theta``.

    ``prior = "beta"`` (Agrawal & Goyal 2012, Alg. 1-2): ``theta_i ~ Beta(S_i + 1, F_i + 1)``
    from successes and failures.  Rewards in [0, 1] that are not binary are turned into a
    Bernoulli(r) success first (their Algorithm 2), with a seeded uniform keyed by (replica,
    arm, pull); sources whose rewards can leave [0, 1] are refused at reset.

    ``prior = "gaussian"`` (Agrawal & Goyal 2013, AISTATS; ALGORITHMS-regret.md 3.6b):
    ``theta_i ~ N(S_i / (k_i + 1), 1 / (k_i + 1))`` with ``k_i`` observed pulls and ``S_i``
    their reward sum: the posterior under a N(0, 1) prior and unit-variance Gaussian noise,
    whatever the true variance.  Rewards are used raw (the seed's Gaussian experiments).
    Its posterior mean and standard deviation are cached per arm and refreshed only for arms
    that receive a result.

    Both: no forced initial pulls; anytime; posterior draws are keyed by (seed, replica,
    decision index); pending pulls are simply not in the posterior yet.
    """

    name = "thompson"
    Params = ThompsonParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        shape = (replicas, problem.n_arms)
        if self.params.prior == "gaussian":
            self.post_mean = np.zeros(shape)
            self.post_sd = np.ones(shape)
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

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.prior == "gaussian":
            theta = self.post_mean + self.post_sd * self.rng.normal(stats.dispatched, stats.n_arms)
            return np.argmax(np.where(stats.active, theta, -np.inf), axis=1)
        theta = self.rng.beta(stats.dispatched, self.successes + 1.0, self.failures + 1.0)
        return np.argmax(np.where(stats.active, theta, -1.0), axis=1)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        if self.params.prior == "gaussian":
            k = stats.counts[rows, arms]
            self.post_mean[rows, arms] = stats.means[rows, arms] * (k / (k + 1.0))
            self.post_sd[rows, arms] = 1.0 / np.sqrt(k + 1.0)
            return
        binary = (rewards == 0.0) | (rewards == 1.0)
        success = rewards == 1.0
        if not binary.all():
            coin = self._coin.uniform(stats.counts[rows, arms] * stats.n_arms + arms, 1, rows=rows)[:, 0]
            success = np.where(binary, success, coin < rewards)
        self.successes[rows, arms] += success
        self.failures[rows, arms] += ~success
