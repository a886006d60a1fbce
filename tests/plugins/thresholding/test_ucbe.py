"""UCB-E: the thresholding index of Mukherjee et al. and the original best-arm index."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.thresholding.ucbe import UCBE
from armlab.problem import Objective
from armlab.testing import pull_once, start_policy

ONE = np.array([0])

MEANS = [0.2, 0.45, 0.6, 0.9]
# T = 104, K = 4, tau = 0.5: gaps 0.3, 0.05, 0.1, 0.4
# H1 = 1/0.09 + 1/0.0025 + 1/0.01 + 1/0.16 = 11.111 + 400 + 100 + 6.25 = 517.361
A_TBP = 100 / 517.3611
# best-arm gaps 0.7, 0.45, 0.3, 0.3: H1 = 2.0408 + 4.9383 + 11.1111 + 11.1111 = 29.2013
A_BEST = 100 / 29.2013


def test_oracle_a_threshold(threshold_problem):
    policy = UCBE()
    start_policy(policy, threshold_problem(MEANS, 104))
    assert policy.a[0] == pytest.approx(A_TBP, rel=1e-5)
    scaled = UCBE({"a_scale": 4.0})
    start_policy(scaled, threshold_problem(MEANS, 104))
    assert scaled.a[0] == pytest.approx(4 * A_TBP, rel=1e-5)


def test_oracle_a_best_arm(threshold_problem):
    policy = UCBE()
    start_policy(policy, threshold_problem(MEANS, 104, objective=Objective.BEST_ARM))
    assert policy.a[0] == pytest.approx(A_BEST, rel=1e-5)


def _crafted(threshold_problem, policy, objective=Objective.THRESHOLD):
    stats = start_policy(policy, threshold_problem(MEANS, 104, objective=objective))
    stats.counts[0] = [1, 4, 9, 16]
    stats.means[0] = [0.3, 0.42, 0.61, 0.88]
    stats.observed[0] = stats.dispatched[0] = 30
    return stats


def test_threshold_index_by_hand(threshold_problem):
    policy = UCBE({"a": 0.36})
    stats = _crafted(threshold_problem, policy)
    # |mean - 0.5| - sqrt(0.36 / n): 0.2 - 0.6, 0.08 - 0.3, 0.11 - 0.2, 0.38 - 0.15
    np.testing.assert_allclose(-policy.index(stats)[0], [-0.4, -0.22, -0.09, 0.23])
    assert int(policy.select(stats)[0]) == 0


def test_best_arm_index_by_hand(threshold_problem):
    policy = UCBE({"a": 0.36})
    stats = _crafted(threshold_problem, policy, Objective.BEST_ARM)
    # mean + sqrt(0.36 / n): 0.9, 0.72, 0.81, 1.03 -> arm 3; recommend the best mean
    np.testing.assert_allclose(policy.index(stats)[0], [0.9, 0.72, 0.81, 1.03])
    assert int(policy.select(stats)[0]) == 3
    assert int(policy.recommend(stats)[0]) == 3


def test_first_pulls_one_per_arm(threshold_problem):
    policy = UCBE()
    stats = start_policy(policy, threshold_problem(MEANS, 104))
    # then keys gap - sqrt(0.19329) = 0.3 - 0.44, 0.05 - 0.44, 0.1 - 0.44, 0.4 - 0.44 -> arm 1
    assert [pull_once(policy, stats, MEANS.__getitem__) for _ in range(5)] == [0, 1, 2, 3, 1]


def test_pending_pulls_shrink_the_width(threshold_problem):
    policy = UCBE({"a": 0.36})
    stats = _crafted(threshold_problem, policy)
    for _ in range(3):  # arm 0: width sqrt(0.36 / 4) = 0.3, key -0.1 -> arm 1 (-0.22)
        stats.dispatch(ONE, np.array([0]))
    assert int(policy.select(stats)[0]) == 1


def test_arm_at_threshold_makes_the_oracle_undefined(threshold_problem):
    with pytest.raises(ConfigError, match="zero gap.*Give the parameter `a`"):
        start_policy(UCBE(), threshold_problem([0.2, 0.5, 0.7], 100))
    start_policy(UCBE({"a": 1.0}), threshold_problem([0.2, 0.5, 0.7], 100))


def test_live_source_needs_explicit_a(threshold_problem):
    live = threshold_problem(MEANS, 104, with_truth=False)
    with pytest.raises(ConfigError, match="needs the source's true means"):
        start_policy(UCBE(), live)
    policy = UCBE({"a": 2.0})
    start_policy(policy, live)
    assert policy.a.tolist() == [2.0]


def test_budget_must_exceed_k(threshold_problem):
    with pytest.raises(ConfigError, match="must exceed 4"):
        start_policy(UCBE(), threshold_problem(MEANS, 4))


def test_oracle_a_is_per_replica():
    from armlab.problem import Problem, Truth
    from armlab.random import KeyedRandom

    means = np.array([MEANS, [0.1, 0.3, 0.7, 0.9]])
    problem = Problem(objective=Objective.THRESHOLD, budget=104, n_arms=4, threshold=0.5,
                      truth=Truth(means=means, variances=np.ones_like(means)))
    policy = UCBE()
    policy.reset(problem, 2, KeyedRandom(0, "p", replicas=np.arange(2)))
    second = 100 / (2 * (1 / 0.16 + 1 / 0.04))
    np.testing.assert_allclose(policy.a, [A_TBP, second], rtol=1e-5)
