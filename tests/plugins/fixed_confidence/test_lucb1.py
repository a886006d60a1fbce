"""LUCB1 (Kalyanakrishnan et al. 2012) against hand-computed rounds and the width of docs/algorithms/fixed-confidence.md."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.fixed_confidence.lucb1 import LUCB1, lucb_width
from armlab.plugins.interfaces import STOPPED
from armlab.problem import Objective
from armlab.testing import pull_once, start_policy


def test_sheet_width_vector():
    # u = 10, t = 100, 10 arms, delta = 0.05 -> sqrt(ln(5 * 10 * 100^4 / (4 * 0.05)) / 20)
    assert lucb_width(10, 100, 10, 0.05) == pytest.approx(1.094124, abs=1e-6)
    with np.errstate(all="raise"):
        assert lucb_width(np.array([0, 4]), 1, 10, 0.05)[0] == math.inf


def test_rounds_pull_h_then_l_from_the_round_start(make_problem):
    policy = LUCB1()
    stats = start_policy(policy, make_problem(n_arms=3, delta=0.1))
    rewards = {0: 1.0, 1: 0.0, 2: 1.0}
    assert [pull_once(policy, stats, rewards.get) for _ in range(3)] == [0, 1, 2]
    # round 1: means (1, 0, 1), equal widths; High = {0} (tie -> lower index), h = 0;
    # l = argmax over {1, 2} of mean + beta = 2.  Pull 0, then 2.
    assert policy.select(stats)[0] == 0 and policy.select(stats)[0] == 0  # repeatable
    assert pull_once(policy, stats, lambda a: 0.0) == 0  # arm 0 drops to mean 1/2
    # the second pull of the round is l = 2, even though the means changed
    assert pull_once(policy, stats, rewards.get) == 2
    # round 2: means (0.5, 0, 1), counts (2, 1, 2): High = {2}, h = 2;
    # l = argmax(0.5 + beta(2, t=2), 0 + beta(1, t=2)) = arm 1 (beta(1) - beta(2) > 0.5)
    beta1, beta2 = lucb_width(1, 2, 3, 0.1), lucb_width(2, 2, 3, 0.1)
    assert beta1 - beta2 > 0.5
    assert pull_once(policy, stats, rewards.get) == 2
    assert pull_once(policy, stats, rewards.get) == 1
    assert policy.rounds[0] == 2


@pytest.mark.parametrize(("means", "epsilon", "stops"), [
    ([0.9, 0.1, 0.1], 0.0, True),
    ([0.5, 0.45, 0.1], 0.1, False),  # U_l - L_h = 0.45 + b - (0.5 - b) = 0.1404
    ([0.5, 0.45, 0.1], 0.15, True),
])
def test_stopping_decision_by_hand(fill_stats, make_problem, means, epsilon, stops):
    beta = math.sqrt(math.log(1.25 * 3 * 1**4 / 0.1) / (2 * 200))
    assert beta == pytest.approx(0.0951885, abs=1e-6)
    policy = LUCB1()
    stats = start_policy(policy, make_problem(n_arms=3, epsilon=epsilon, delta=0.1))
    fill_stats(stats, [200, 200, 200], means)
    assert bool(policy.select(stats)[0] == STOPPED) is stops
    assert bool(policy.confident[0]) is stops


def test_top_m_answer_frozen_at_stop(fill_stats, make_problem):
    problem = make_problem(n_arms=4, objective=Objective.TOP_M, top_m=2, delta=0.1)
    policy = LUCB1()
    stats = start_policy(policy, problem)
    fill_stats(stats, [300] * 4, [0.9, 0.2, 0.8, 0.1])
    assert policy.select(stats)[0] == STOPPED
    fill_stats(stats, [300] * 4, [0.1, 0.2, 0.8, 0.9])
    assert policy.recommend(stats)[0].tolist() == [True, False, True, False]


def test_configuration_errors(make_problem):
    with pytest.raises(ConfigError, match="m = 2 must be smaller"):
        start_policy(LUCB1(), make_problem(n_arms=2, objective=Objective.TOP_M, top_m=2))
    with pytest.raises(ConfigError, match="delta = 0.0 must lie strictly"):
        start_policy(LUCB1(), make_problem(delta=0.0))
    with pytest.raises(ConfigError, match="set the policy parameter b"):
        start_policy(LUCB1(), make_problem(reward_range=(-math.inf, math.inf)))
    policy = LUCB1({"b": 2.0})
    start_policy(policy, make_problem(reward_range=(-math.inf, math.inf)))
    assert policy.span == 2.0
