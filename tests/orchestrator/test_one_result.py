"""One replica's one result and one dispatch (the live experiment's every result and
dispatch) take ArmStats' and the core's scalar paths; the statistics and counts are bit for
bit those of the array path (a second replica forces that one)."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.orchestrator.core import DecisionCore
from armlab.plugins.allocators.single import Single
from armlab.plugins.policies.ucb1 import UCB1
from armlab.problem import Objective, Problem
from armlab.stats import ArmStats

K = 3


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_one_result_of_one_replica_folds_like_the_array_path(dtype):
    rng = np.random.default_rng(5)
    one, two = ArmStats(1, K), ArmStats(2, K)
    row = np.array([0])
    for arm, reward in zip(rng.integers(0, K, 500), rng.normal(3.0, 2.0, 500) * 10, strict=True):
        arms, rewards = np.array([arm]), np.array([reward]).astype(dtype)
        for stats in (one, two):
            stats.dispatch(row, arms)
            stats.dispatch(row, arms)  # one stays pending
            stats.observe(row, arms, rewards)
    for name in ("counts", "means", "m2", "pending"):
        assert getattr(one, name)[0].tobytes() == getattr(two, name)[0].tobytes(), name
    assert (one.observed[0], one.dispatched[0]) == (two.observed[0], two.dispatched[0]) == (500, 1000)


def test_one_row_dispatches_count_like_the_array_path():
    """A dispatch of one row (the live experiment's) takes the scalar path of ArmStats and of
    the core's own count; both count as a dispatch of several rows does."""
    problem = Problem(Objective.REGRET, budget=100, n_arms=K)
    one_by_one, together = (DecisionCore(policy_factory=UCB1, problems=[problem], allocator=Single(), seed=1,
                                         replicas=np.arange(3), checkpoints=[]) for _ in range(2))
    for arms in np.random.default_rng(8).integers(0, K, (40, 3)):
        for row in range(3):
            one_by_one.dispatch(0, np.array([row]), arms[row:row + 1])
        together.dispatch(0, np.arange(3), arms)
    assert one_by_one.dispatched.tolist() == together.dispatched.tolist() == [40, 40, 40]
    for name in ("pending", "dispatched"):
        assert getattr(one_by_one.stats[0], name).tobytes() == getattr(together.stats[0], name).tobytes()
