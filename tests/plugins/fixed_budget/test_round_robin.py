"""Round robin over the active arms: RoundRobin (policies that eliminate arms themselves) and
uniform allocation (arms retired by someone else), by hand and at the extremes that the
speed-path contract (tests/plugins/test_fast_paths.py) does not reach."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins._fast import reference_paths
from armlab.plugins._fast.pulls_since_start import ELIMINATED
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.round_robin import RoundRobin
from armlab.stats import ArmStats
from armlab.testing import problem_with_truth, start_policy


def both_paths(choose):
    """``choose()`` with the speed paths and inside ``reference_paths()``; both answers."""
    fast = choose()
    with reference_paths():
        reference = choose()
    return fast, reference


def test_fewest_pulls_since_the_start_lowest_index_first():
    stats = ArmStats(2, 4)
    stats.counts[:] = [[5, 3, 4, 3], [2, 2, 2, 2]]
    stats.pending[:] = [[0, 1, 0, 0], [0, 0, 0, 0]]
    robin = RoundRobin(2, 4)
    robin.restart(stats, np.arange(2), np.array([[4, 0, 0, 0], [0, 0, 0, 0]]))
    for arms in both_paths(lambda: robin.select(stats)):
        np.testing.assert_array_equal(arms, [0, 0])  # pulls since the start: (1, 4, 4, 3), (2, 2, 2, 2)


def test_arms_inactive_at_a_restart_are_never_picked_whatever_the_counts():
    top = 2**61  # active arms with up to 2**61 pulls, eliminated ones with anything from 0 up
    stats = ArmStats(4, 3)
    stats.counts[:] = [[top, top - 1, 0], [top, 0, top], [0, top, top], [top, top, top]]
    stats.active[:] = [[True, True, False], [True, False, True], [False, True, True], [False, True, False]]
    robin = RoundRobin(4, 3)
    robin.restart(stats, np.arange(4), 0)
    for arms in both_paths(lambda: robin.select(stats)):
        np.testing.assert_array_equal(arms, [1, 0, 1, 1])
    for pulls in both_paths(lambda: robin.pulls(stats).copy()):
        assert (pulls[~stats.active] >= ELIMINATED).all()
        np.testing.assert_array_equal(pulls[stats.active], stats.counts[stats.active])


@pytest.mark.parametrize("order", ["round-robin", "random"])
def test_uniform_skips_arms_retired_during_the_run(order):
    policy = Uniform({"order": order})
    stats = start_policy(policy, problem_with_truth([0.5] * 5, budget=100), replicas=50)
    stats.counts[:] = np.arange(5)[::-1]  # round robin: the last arm has the fewest pulls
    stats.dispatched[:] = stats.observed[:] = 10
    fast, reference = both_paths(lambda: policy.select(stats))
    np.testing.assert_array_equal(fast, reference)
    if order == "round-robin":
        assert (fast == 4).all()
    stats.active[:, [1, 4]] = False  # retired by the operator, without telling the policy
    fast, reference = both_paths(lambda: policy.select(stats))
    np.testing.assert_array_equal(fast, reference)
    assert not np.isin(fast, [1, 4]).any()
    if order == "round-robin":
        assert (fast == 3).all()
