"""UCBEV (GapE-V for thresholding, as in Mukherjee et al.): Bernstein index, oracle a, budget guard."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.thresholding.ucbev import UCBEV
from armlab.testing import pull_once, start_policy

# two arms, tau = 0.5, T = 100: gaps 0.2, 0.05; sigma = 0.2, 0.3
# numerators sigma + sqrt(sigma^2 + 16/3 gap) = 0.2 + sqrt(1.10667) = 1.25198, 0.3 + sqrt(0.35667) = 0.89722
# squared:   1.25198^2 / 0.04 + 0.89722^2 / 0.0025 = 39.186 + 322.00 = 361.18 -> a = 96 / 361.18 = 0.26579
# unsquared: 1.25198 / 0.04 + 0.89722 / 0.0025 = 31.30 + 358.89 = 390.19    -> a = 96 / 390.19 = 0.24604
MEANS, VARIANCES = [0.3, 0.55], [0.04, 0.09]


@pytest.mark.parametrize(("params", "expected"), [
    ({}, 0.26579), ({"squared": False}, 0.24604), ({"a_scale": 0.25}, 0.26579 / 4), ({"a": 3.0}, 3.0),
])
def test_exploration_parameter(threshold_problem, params, expected):
    policy = UCBEV(params)
    start_policy(policy, threshold_problem(MEANS, 100, variances=VARIANCES))
    assert policy.a[0] == pytest.approx(expected, rel=1e-4)


def test_index_by_hand(threshold_problem):
    policy = UCBEV({"a": 0.5})
    stats = start_policy(policy, threshold_problem(MEANS, 100, variances=VARIANCES))
    stats.counts[0] = [2, 5]
    stats.means[0] = [0.3, 0.55]
    stats.m2[0] = [0.08, 0.08]  # unbiased s^2 = 0.08, 0.02
    stats.observed[0] = stats.dispatched[0] = 7
    # arm 0: 0.2 - (sqrt(2 0.5 0.08 / 2) + 7 0.5 / (3 1)) = 0.2 - (0.2 + 1.16667) = -1.16667
    # arm 1: 0.05 - (sqrt(2 0.5 0.02 / 5) + 7 0.5 / (3 4)) = 0.05 - (0.063246 + 0.291667) = -0.304912
    np.testing.assert_allclose(-policy.index(stats)[0], [-1.166667, -0.304912], rtol=1e-5)
    assert int(policy.select(stats)[0]) == 0
    # b scales the second term only
    wide = UCBEV({"a": 0.5, "b": 2.0})
    start_policy(wide, threshold_problem(MEANS, 100, variances=VARIANCES))
    assert -wide.index(stats)[0, 1] == pytest.approx(0.05 - (0.063246 + 0.583333), rel=1e-5)


def test_two_initial_pulls_per_arm(threshold_problem):
    policy = UCBEV({"a": 0.5})
    rewards = [0.3, 0.55, 0.9]
    stats = start_policy(policy, threshold_problem(rewards, 100))
    assert [pull_once(policy, stats, rewards.__getitem__) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
    assert stats.counts[0].tolist() == [2, 2, 2]


@pytest.mark.parametrize("budget", [6, 8])
def test_budget_must_exceed_2k(threshold_problem, budget):
    with pytest.raises(ConfigError, match="must exceed 8"):
        start_policy(UCBEV({"a": 1.0}), threshold_problem([0.1, 0.3, 0.7, 0.9], budget))
    start_policy(UCBEV({"a": 1.0}), threshold_problem([0.1, 0.3, 0.7, 0.9], 9))


def test_oracle_needs_variances_of_a_simulated_source(threshold_problem):
    with pytest.raises(ConfigError, match="true means and variances"):
        start_policy(UCBEV(), threshold_problem(MEANS, 100, with_truth=False))
    with pytest.raises(ConfigError, match="zero gap"):
        start_policy(UCBEV(), threshold_problem([0.5, 0.7], 100))
