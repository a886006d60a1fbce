"""APT (Locatelli et al. 2016) against its index computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.plugins.thresholding.apt import APT
from armlab.testing import pull_once, start_policy

ONE = np.array([0])


def _crafted(threshold_problem, policy):
    stats = start_policy(policy, threshold_problem([0.7, 0.45, 0.52], 100))
    stats.counts[0] = [4, 1, 9]
    stats.means[0] = [0.7, 0.45, 0.52]
    stats.observed[0] = stats.dispatched[0] = 14
    return stats


def test_index_by_hand(threshold_problem):
    policy = APT()
    stats = _crafted(threshold_problem, policy)
    # sqrt(n) (|mean - 0.5| + 0.05): 2 * 0.25, 1 * 0.10, 3 * 0.07
    np.testing.assert_allclose(-policy.index(stats)[0], [0.5, 0.1, 0.21])
    assert int(policy.select(stats)[0]) == 1
    policy = APT({"epsilon": 0.0})
    stats = _crafted(threshold_problem, policy)
    np.testing.assert_allclose(-policy.index(stats)[0], [0.4, 0.05, 0.06])


def test_first_pulls_in_index_order(threshold_problem):
    policy = APT()
    stats = start_policy(policy, threshold_problem([0.1, 0.9, 0.5, 0.45], 100))
    rewards = [0.1, 0.9, 0.5, 0.45]
    # after one pull each: keys 0.45, 0.45, 0.05, 0.10 -> arm 2; its key grows to
    # sqrt(2) 0.05 = 0.071, then sqrt(3) 0.05 = 0.087, both still below arm 3's 0.10
    assert [pull_once(policy, stats, rewards.__getitem__) for _ in range(6)] == [0, 1, 2, 3, 2, 2]


def test_pending_pulls_count_in_n(threshold_problem):
    policy = APT()
    stats = _crafted(threshold_problem, policy)
    for _ in range(3):  # arm 1 with 4 pulls: 2 * 0.10 = 0.20 < 0.21, still arm 1
        stats.dispatch(ONE, np.array([1]))
    assert int(policy.select(stats)[0]) == 1
    stats.dispatch(ONE, np.array([1]))  # 5 pulls: sqrt(5) * 0.1 = 0.224 > 0.21
    assert int(policy.select(stats)[0]) == 2


def test_random_tie_break_is_seeded(threshold_problem):
    policy = APT({"tie_break": "random"})
    stats = start_policy(policy, threshold_problem([0.4] * 6, 100), replicas=64)
    stats.counts[:] = 1
    stats.means[:] = 0.4
    stats.observed[:] = stats.dispatched[:] = 6
    arms = policy.select(stats)
    assert np.array_equal(arms, policy.select(stats))
    assert len(set(arms.tolist())) > 1  # not always the lowest index


def test_epsilon_must_be_non_negative():
    with pytest.raises(ValidationError):
        APT({"epsilon": -0.1})
