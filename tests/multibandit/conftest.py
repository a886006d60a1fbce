"""Fixtures for multi-bandit tests: crafted per-bandit statistics and small experiments."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from armlab.config import validate_config
from armlab.multibandit import BanditProblem
from armlab.problem import Objective
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class Bandits:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    @staticmethod
    def start(allocator, arm_counts=(3, 3), replicas=1, budget=5000, top_m=1, targets=None):
        """Reset ``allocator`` on bandits with ``arm_counts`` arms; return their statistics."""
        objective = Objective.TOP_M if top_m > 1 else Objective.BEST_ARM
        targets = targets or [None] * len(arm_counts)
        problems = [
            BanditProblem(objective=objective, budget=budget, n_arms=k, top_m=top_m, source="test",
                          reward_range=(0.0, 1.0), target_arm=t)
            for k, t in zip(arm_counts, targets, strict=True)
        ]
        allocator.reset(problems, replicas, KeyedRandom(0, "allocator", replicas=np.arange(replicas)))
        return [ArmStats(replicas, k) for k in arm_counts]

    @staticmethod
    def fill(stats, counts, successes):
        """Give every replica of one bandit the same observed Bernoulli statistics."""
        counts = np.asarray(counts, dtype=float)
        successes = np.asarray(successes, dtype=float)
        means = successes / counts
        stats.counts[:] = counts.astype(np.int64)
        stats.means[:] = means
        stats.m2[:] = counts * means * (1.0 - means)  # Bernoulli: sum of squared deviations
        stats.observed[:] = int(counts.sum())
        stats.dispatched[:] = int(counts.sum())

    @staticmethod
    def advance(stats, trials):
        """Pretend ``trials`` more trials happened elsewhere (moves the keyed clocks)."""
        stats[0].dispatched += trials


@pytest.fixture
def bandits() -> type[Bandits]:
    return Bandits


MULTI: dict[str, Any] = {
    "name": "multi",
    "seed": 11,
    "replicas": 5,
    "checkpoint_every": 100,
    "problem": {"objective": "best-arm", "budget": 300},
    "bandits": [
        {"label": "easy", "source": {"plugin": "gap-bernoulli", "n_arms": 4, "gap": 0.3}},
        {"label": "hard", "count": 2, "source": {"plugin": "gap-bernoulli", "n_arms": 4, "gap": 0.02}},
        {"label": "three", "source": {"plugin": "gap-bernoulli", "n_arms": 3, "gap": 0.1}},
    ],
    "policies": [
        {"plugin": "bayes-topm", "warmup_per_arm": 2, "allocator": {"plugin": "gcp-bayes", "warmup_per_arm": 2}},
    ],
}


@pytest.fixture
def multi_config():
    """``multi_config(**top_level_updates)``: a small multi-bandit experiment."""

    def make(**updates: Any):
        data = copy.deepcopy(MULTI)
        data.update(updates)
        return validate_config(data)

    return make
