"""The allocator of one-bandit experiments."""

from __future__ import annotations

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins.interfaces import Allocator
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class Single(Allocator):
    """Every trial goes to the only bandit (the default for one-bandit experiments)."""

    name = "single"

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        if len(problems) != 1:
            raise ConfigError(
                f"allocator 'single' serves exactly one bandit, the experiment has "
                f"{len(problems)}; choose a multi-bandit allocator in [allocator]"
            )
        super().reset(problems, replicas, rng)
        self._zeros = np.zeros(replicas, dtype=np.int64)

    def select(self, stats: list[ArmStats]) -> np.ndarray:
        return self._zeros
