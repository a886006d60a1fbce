"""The ``hand`` fixture: drive a policy by hand on crafted statistics."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.interfaces import STOPPED
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

ONE = np.array([0])


def make_problem(n_arms=3, budget=1000, objective=Objective.BEST_ARM, top_m=1, epsilon=0.0,
                 delta=0.1, means=None, reward_range=(0.0, 1.0)):
    truth = None
    if means is not None:
        mu = np.asarray([means], dtype=float)
        truth = Truth(means=mu, variances=mu * (1 - mu))
    return Problem(objective=objective, budget=budget, n_arms=n_arms, top_m=top_m, epsilon=epsilon,
                   delta=delta, truth=truth, source="test", reward_range=reward_range)


def start(policy, problem, replicas=1):
    policy.reset(problem, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
    return ArmStats(replicas, problem.n_arms)


def fill(stats, counts, means, row=0):
    """Set the observed statistics of one replica directly (as if all pulls were observed)."""
    stats.counts[row] = counts
    stats.means[row] = means
    stats.observed[row] = int(np.sum(counts))
    stats.dispatched[row] = int(np.sum(counts))


def pull(policy, stats, reward_of):
    """One step for replica 0: select, dispatch, observe ``reward_of(arm)``; return the arm."""
    arm = int(policy.select(stats)[0])
    if arm == STOPPED:
        return arm
    reward = np.array([float(reward_of(arm))])
    stats.dispatch(ONE, np.array([arm]))
    stats.observe(ONE, np.array([arm]), reward)
    policy.update(stats, ONE, np.array([arm]), reward)
    return arm


class Hand:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    ONE = ONE
    make_problem = staticmethod(make_problem)
    start = staticmethod(start)
    fill = staticmethod(fill)
    pull = staticmethod(pull)


@pytest.fixture
def hand() -> type[Hand]:
    return Hand
