"""Thompson sampling with a Beta-Bernoulli model (Agrawal & Goyal 2012)."""

from __future__ import annotations

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins.interfaces import Policy
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class Thompson(Policy):
    """Beta-Bernoulli Thompson sampling: draw ``theta_i ~ Beta(S_i + 1, F_i + 1)`` for every
    arm and pull ``argmax theta``.

    Rewards in [0, 1] that are not binary are turned into a Bernoulli(r) success first
    (Agrawal & Goyal's Algorithm 2), with a seeded uniform keyed by (replica, arm, pull).
    Sources whose rewards can leave [0, 1] are refused at reset.  Posterior draws are keyed by (seed, replica,
    decision index).  Pending pulls are simply not in the posterior yet.
    """

    name = "thompson"

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        low, high = problem.reward_range
        if low < 0.0 or high > 1.0:
            raise ConfigError(
                f"{self.name}: Beta-Bernoulli Thompson sampling needs rewards in [0, 1], but "
                f"source {problem.source!r} produces rewards in [{low}, {high}]"
            )
        self.successes = np.zeros((replicas, problem.n_arms))
        self.failures = np.zeros((replicas, problem.n_arms))
        self._coin = KeyedRandom(*rng.words, "bernoulli-trial", replicas=rng.replicas)

    def select(self, stats: ArmStats) -> np.ndarray:
        theta = self.rng.beta(stats.dispatched, self.successes + 1.0, self.failures + 1.0)
        return np.argmax(np.where(stats.active, theta, -1.0), axis=1)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        binary = (rewards == 0.0) | (rewards == 1.0)
        success = rewards == 1.0
        if not binary.all():
            coin = self._coin.uniform(stats.counts[rows, arms] * stats.n_arms + arms, 1, rows=rows)[:, 0]
            success = np.where(binary, success, coin < rewards)
        self.successes[rows, arms] += success
        self.failures[rows, arms] += ~success
