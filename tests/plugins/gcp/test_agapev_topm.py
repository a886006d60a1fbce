"""The greedy-confidence-pursuit paper's UCB baseline: A-GapE-V for top-m with the prior's pseudo-observations."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.gcp.agapev_topm import AGapEVTopM, with_prior_pseudo_observations
from armlab.stats import ArmStats

ONE = np.array([0])


def observed(rewards_per_arm):
    stats = ArmStats(1, len(rewards_per_arm))
    for arm, rewards in enumerate(rewards_per_arm):
        for r in rewards:
            stats.dispatch(ONE, np.array([arm]))
            stats.observe(ONE, np.array([arm]), np.array([float(r)]))
    return stats


def test_pseudo_observations_by_hand():
    counts, means, variances = with_prior_pseudo_observations(observed([[1, 1, 0], []]))
    # arm 0: (1, 1, 0) + (1, 0) -> n = 5, mean 0.6, unbiased variance (3 * 0.16 + 2 * 0.36) / 4
    # arm 1: only (1, 0) -> n = 2, mean 0.5, variance 0.5
    assert counts[0].tolist() == [5.0, 2.0]
    assert means[0] == pytest.approx([0.6, 0.5])
    assert variances[0] == pytest.approx([0.3, 0.5])


def test_index_by_hand(start_rule):
    budget = 5000
    policy = AGapEVTopM({"warmup_per_arm": 0})
    start_rule(policy, n_arms=3, budget=budget)
    stats = observed([[1] * 6 + [0] * 2, [1] * 4 + [0] * 4, [1, 0, 0, 0]])
    # with the pseudo-observations: T = (10, 10, 6), means (0.7, 0.5, 1/3),
    # unbiased variances (10*.7*.3/9, 10*.25/9, 6*(1/3)(2/3)/5); midpoint 0.6
    t = np.array([10.0, 10.0, 6.0])
    r = np.array([0.7, 0.5, 1 / 3])
    v = t * r * (1 - r) / (t - 1)
    gap = np.abs(r - 0.6)
    d_plus = gap + np.sqrt(1 / (2 * t))
    v_minus = np.maximum(0.0, v - np.sqrt(2 / (t - 1)))
    h = ((v_minus + np.sqrt(v_minus**2 + 16 / 3 * d_plus)) ** 2 / d_plus**2).sum()
    a = 8 / 9 * (budget - 6) / h
    expected = -gap + np.sqrt(2 * a * v / t) + 7 * a / (3 * (t - 1))
    assert policy.index(stats)[0] == pytest.approx(expected)
    assert policy.select(stats).tolist() == [int(np.argmax(expected))]


def test_pending_pulls_do_not_shrink_the_width(start_rule):
    policy = AGapEVTopM({"warmup_per_arm": 0})
    start_rule(policy, n_arms=3)
    stats = observed([[1] * 6 + [0] * 2, [1] * 4 + [0] * 4, [1, 0, 0, 0]])
    before = policy.index(stats).copy()
    for _ in range(5):
        stats.dispatch(ONE, np.array([int(policy.select(stats)[0])]))
    assert np.array_equal(policy.index(stats), before)  # the same arm is repeated meanwhile
    assert (stats.pending[0] > 0).sum() == 1


def test_warm_up_and_map_answer(fill_counts, start_rule):
    policy = AGapEVTopM({"warmup_per_arm": 1})
    stats = start_rule(policy, n_arms=3)
    arms = []
    for _ in range(3):
        arms.append(int(policy.select(stats)[0]))
        stats.dispatch(ONE, np.array([arms[-1]]))
    assert arms == [0, 1, 2]
    fill_counts(stats, [1, 100, 100], [1, 70, 10])  # MAP means (2/3, 71/102, 11/102)
    assert policy.recommend(stats).tolist() == [1]
