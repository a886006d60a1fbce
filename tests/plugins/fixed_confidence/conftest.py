"""The ``hand`` fixture: drive a policy by hand on crafted statistics."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.problem import Objective, Problem, Truth
from armlab.testing import pull_once, start_policy

ONE = np.array([0])


def make_problem(n_arms=3, budget=1000, objective=Objective.BEST_ARM, top_m=1, epsilon=0.0,
                 delta=0.1, means=None, reward_range=(0.0, 1.0)):
    truth = None
    if means is not None:
        mu = np.asarray([means], dtype=float)
        truth = Truth(means=mu, variances=mu * (1 - mu))
    return Problem(objective=objective, budget=budget, n_arms=n_arms, top_m=top_m, epsilon=epsilon,
                   delta=delta, truth=truth, source="test", reward_range=reward_range)


def fill(stats, counts, means, row=0):
    """Set the observed statistics of one replica directly (as if all pulls were observed)."""
    stats.counts[row] = counts
    stats.means[row] = means
    stats.observed[row] = int(np.sum(counts))
    stats.dispatched[row] = int(np.sum(counts))


class Hand:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    ONE = ONE
    make_problem = staticmethod(make_problem)
    start = staticmethod(start_policy)
    fill = staticmethod(fill)
    pull = staticmethod(pull_once)


@pytest.fixture
def hand() -> type[Hand]:
    return Hand
