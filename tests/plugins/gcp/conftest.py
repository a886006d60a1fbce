"""Fixtures for the greedy-confidence-pursuit arm rules: start one on crafted Bernoulli statistics."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from armlab.problem import Objective, Problem
from armlab.stats import ArmStats
from armlab.testing import start_policy


def _start_rule(policy, n_arms=3, replicas=1, budget=5000, top_m=1, reward_range=(0.0, 1.0)) -> ArmStats:
    objective = Objective.TOP_M if top_m > 1 else Objective.BEST_ARM
    problem = Problem(objective=objective, budget=budget, n_arms=n_arms, top_m=top_m, source="test",
                      reward_range=reward_range)
    return start_policy(policy, problem, replicas)


def _fill_counts(stats: ArmStats, counts, successes) -> None:
    counts = np.asarray(counts, dtype=float)
    stats.counts[:] = counts.astype(np.int64)
    stats.means[:] = np.asarray(successes) / counts
    stats.observed[:] = int(counts.sum())
    stats.dispatched[:] = int(counts.sum())


@pytest.fixture(scope="session")
def start_rule() -> Callable[..., ArmStats]:
    """``start_rule(policy, n_arms=3, replicas=1, budget=5000, top_m=1)``: reset ``policy`` on a
    best-arm (top-m when ``top_m > 1``) problem; returns its empty statistics."""
    return _start_rule


@pytest.fixture(scope="session")
def fill_counts() -> Callable[..., None]:
    """``fill_counts(stats, counts, successes)``: give every replica the same observed Bernoulli
    statistics."""
    return _fill_counts
