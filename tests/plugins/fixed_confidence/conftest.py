"""Fixtures for the fixed-confidence rules: a problem of their kind and crafted statistics.

Starting a policy and single pulls come from :mod:`armlab.testing` (``start_policy``,
``pull_once``), imported by the tests themselves.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from armlab.problem import Objective, Problem, Truth
from armlab.stats import ArmStats


def _make_problem(n_arms=3, budget=1000, objective=Objective.BEST_ARM, top_m=1, epsilon=0.0,
                  delta=0.1, means=None, reward_range=(0.0, 1.0)) -> Problem:
    truth = None
    if means is not None:
        mu = np.asarray([means], dtype=float)
        truth = Truth(means=mu, variances=mu * (1 - mu))
    return Problem(objective=objective, budget=budget, n_arms=n_arms, top_m=top_m, epsilon=epsilon,
                   delta=delta, truth=truth, source="test", reward_range=reward_range)


def _fill_stats(stats: ArmStats, counts, means, row: int = 0) -> None:
    stats.counts[row] = counts
    stats.means[row] = means
    stats.observed[row] = int(np.sum(counts))
    stats.dispatched[row] = int(np.sum(counts))


@pytest.fixture(scope="session")
def make_problem() -> Callable[..., Problem]:
    """``make_problem(n_arms=3, budget=1000, objective, top_m, epsilon, delta=0.1, means=None)``:
    a problem with Bernoulli truth ``means`` (or none, as a live source gives)."""
    return _make_problem


@pytest.fixture(scope="session")
def fill_stats() -> Callable[..., None]:
    """``fill_stats(stats, counts, means, row=0)``: set one replica's observed statistics
    directly, as if all its pulls were observed."""
    return _fill_stats
