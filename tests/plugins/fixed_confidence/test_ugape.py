"""UGapE (the UGapE paper) against hand-computed steps and hand-computed vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.errors import ConfigError
from armlab.plugins.fixed_confidence.ugape import (
    UGapEb,
    UGapEc,
    gap_indices,
    select_arm,
    ugape_round,
)
from armlab.plugins.interfaces import STOPPED
from armlab.problem import Objective
from armlab.testing import pull_once, start_policy

ONE = np.array([0])


def test_round_by_hand_best_arm():
    means = np.array([[0.6, 0.5, 0.3]])
    beta = np.array([[0.1, 0.2, 0.1]])
    U, L = means + beta, means - beta
    assert U[0] == pytest.approx([0.7, 0.7, 0.4])
    # B_k = max_{i != k} U_i - L_k = (0.7 - 0.5, 0.7 - 0.3, 0.7 - 0.2)
    assert gap_indices(U, L, 1)[0] == pytest.approx([0.2, 0.4, 0.5])
    now = ugape_round(beta, U, L, 1)
    assert now.chosen.tolist() == [[0]] and now.b_set[0] == pytest.approx(0.2)
    # u = argmax_{not J} U = arm 1 (beta 0.2) beats l = arm 0 (beta 0.1)
    assert now.arm.tolist() == [1]
    # equal widths: l wins
    beta = np.full((1, 3), 0.1)
    assert ugape_round(beta, means + beta, means - beta, 1).arm.tolist() == [0]


def test_gap_indices_m_th_largest_of_the_others_with_ties():
    means = np.array([[0.5, 0.5, 0.4, 0.1]])
    beta = np.full((1, 4), 0.1)
    U, L = means + beta, means - beta
    # U = (0.6, 0.6, 0.5, 0.2), L = (0.4, 0.4, 0.3, 0.0); 2nd largest U among the others
    # is 0.5 for arms 0 and 1, 0.6 for arms 2 and 3
    assert gap_indices(U, L, 2)[0] == pytest.approx([0.1, 0.1, 0.3, 0.6])
    now = ugape_round(beta, U, L, 2)
    assert now.chosen.tolist() == [[0, 1]] and now.b_set[0] == pytest.approx(0.1)


def test_round_ties():
    # J: B = (0.5, 0.2, 0.4, 0.4, 0.7) ties for the second place: the lower index
    U = np.array([[0.9, 0.8, 0.8, 0.8, 0.5]])
    L = np.array([[0.3, 0.6, 0.4, 0.4, 0.1]])
    beta = np.array([[0.3, 0.1, 0.2, 0.2, 0.2]])
    assert gap_indices(U, L, 2)[0] == pytest.approx([0.5, 0.2, 0.4, 0.4, 0.7])
    now = ugape_round(beta, U, L, 2)
    assert now.chosen.tolist() == [[1, 2]] and now.b_set[0] == pytest.approx(0.4)
    # l = arm 2 (L = 0.4), u = arm 0 (U = 0.9, the wider): u
    assert now.arm.tolist() == [0]
    assert select_arm(np.array([2]), np.array([0]), beta).tolist() == [0]
    # u: arms 1 and 2 tie on U = 0.8 outside J = {0}: the larger width, arm 2
    U, L = np.array([[1.0, 0.8, 0.8]]), np.array([[0.9, 0.2, 0.4]])
    now = ugape_round(np.array([[0.05, 0.2, 0.3]]), U, L, 1)
    assert now.chosen.tolist() == [[0]] and now.arm.tolist() == [2]
    # l: arms 0 and 1 of J tie on L = 0.5: the larger width, arm 1, which ties u's width: l
    U, L = np.array([[0.9, 0.9, 0.5]]), np.array([[0.5, 0.5, 0.1]])
    now = ugape_round(np.array([[0.1, 0.2, 0.2]]), U, L, 2)
    assert now.chosen.tolist() == [[0, 1]] and now.arm.tolist() == [1]


def test_sheet_vector_optimal_a(make_problem):
    # mu = (0.9, 0.8, 0.7, 0.5), m = 2, eps = 0.05, b = 1: H_eps = 452.2086, a* = 1.10347
    problem = make_problem(n_arms=4, budget=2000, objective=Objective.TOP_M, top_m=2, epsilon=0.05,
                                means=[0.9, 0.8, 0.7, 0.5])
    policy = UGapEb()
    start_policy(policy, problem)
    assert policy.a[0] == pytest.approx(1.10347, rel=1e-5)
    policy = UGapEb({"eta": 2.0})
    start_policy(policy, problem)
    assert policy.a[0] == pytest.approx(2 * 1.10347, rel=1e-5)


def test_ugapeb_first_pulls_then_rule(make_problem):
    policy = UGapEb({"a": 1.0})
    stats = start_policy(policy, make_problem(n_arms=3))
    rewards = {0: 1.0, 1: 0.0, 2: 1.0}
    assert [pull_once(policy, stats, rewards.get) for _ in range(3)] == [0, 1, 2]
    # beta = 1 for all, means (1, 0, 1): U = (2, 1, 2), L = (0, -1, 0); B = (2, 3, 2)
    # J = {0} (tie with arm 2 -> lower index); u = arm 2, l = arm 0, equal beta -> l
    assert pull_once(policy, stats, rewards.get) == 0


def test_ugapeb_answer_is_the_running_best(fill_stats, make_problem):
    policy = UGapEb({"a": 1.0})
    stats = start_policy(policy, make_problem(n_arms=2))
    fill_stats(stats, [10, 10], [0.9, 0.1])
    policy.update(stats, ONE, np.array([0]), np.array([1.0]))
    # beta = sqrt(1/10): B = (0.1 + b - (0.9 - b), ...) -> J = {0}, B_J = -0.1675
    assert policy.best_b[0] == pytest.approx(-0.8 + 2 * math.sqrt(0.1))
    fill_stats(stats, [11, 10], [0.2, 0.3])
    policy.update(stats, ONE, np.array([0]), np.array([0.0]))
    # now J = {1} with B_J = 0.5177 > -0.1675: the earlier set stays the answer
    assert policy.recommend(stats).tolist() == [0]
    assert np.argmax(stats.means[0]) == 1


def test_ugapec_stopping_decision_by_hand(fill_stats, make_problem):
    # K = 2, n = 50 each, t - 1 = 100, delta = 0.1, c = 1/2:
    # beta = sqrt(0.5 ln(4 * 2 * 100^3 / 0.1) / 50) = 0.42659; B_J = 0.1 + beta - (0.9 - beta)
    b_set = 0.1 + 2 * math.sqrt(0.5 * math.log(4 * 2 * 100**3 / 0.1) / 50) - 0.9
    assert b_set == pytest.approx(0.053171, abs=1e-6)
    for epsilon, stops in [(0.06, True), (0.05, False)]:
        policy = UGapEc()
        stats = start_policy(policy, make_problem(n_arms=2, epsilon=epsilon, delta=0.1))
        fill_stats(stats, [50, 50], [0.9, 0.1])
        arm = int(policy.select(stats)[0])
        assert (arm == STOPPED) is stops
        assert policy.recommend(stats).tolist() == [0]


def test_ugapec_answer_frozen_at_stop(fill_stats, make_problem):
    policy = UGapEc()
    stats = start_policy(policy, make_problem(n_arms=2, epsilon=0.06))
    fill_stats(stats, [50, 50], [0.9, 0.1])
    assert policy.select(stats)[0] == STOPPED
    fill_stats(stats, [60, 50], [0.05, 0.1])  # a late result would flip the empirical answer
    assert policy.recommend(stats).tolist() == [0]
    assert policy.select(stats)[0] == STOPPED


def test_ugapec_pulls_each_arm_once_first(make_problem):
    policy = UGapEc()
    stats = start_policy(policy, make_problem(n_arms=4, delta=0.05))
    assert [pull_once(policy, stats, lambda a: 0.5) for _ in range(4)] == [0, 1, 2, 3]


@pytest.mark.parametrize("cls", [UGapEb, UGapEc])
def test_m_must_be_below_k(cls, make_problem):
    with pytest.raises(ConfigError, match="m = 3 must be smaller"):
        start_policy(cls({"a": 1.0} if cls is UGapEb else {}),
                   make_problem(n_arms=3, objective=Objective.TOP_M, top_m=3))


def test_delta_checks(make_problem):
    with pytest.raises(ValidationError):
        UGapEc({"delta": 1.0})
    with pytest.raises(ConfigError, match="delta = 1.5 must lie strictly between 0 and 1"):
        start_policy(UGapEc(), make_problem(delta=1.5))
    with pytest.raises(ConfigError, match=r"set \[problem\] delta"):
        start_policy(UGapEc(), make_problem(delta=None))
    policy = UGapEc({"delta": 0.01})
    start_policy(policy, make_problem(delta=0.2))
    assert policy.delta == 0.01


def test_ugapeb_configuration_errors(make_problem):
    with pytest.raises(ConfigError, match="budget n = 3 must exceed K = 3"):
        start_policy(UGapEb({"a": 1.0}), make_problem(n_arms=3, budget=3))
    with pytest.raises(ConfigError, match="needs the source's true means"):
        start_policy(UGapEb(), make_problem(n_arms=3))
    with pytest.raises(ConfigError, match="zero gap"):
        start_policy(UGapEb(), make_problem(n_arms=3, means=[0.5, 0.5, 0.2]))
    with pytest.raises(ConfigError, match="set the policy parameter b"):
        start_policy(UGapEb({"a": 1.0}), make_problem(reward_range=(-math.inf, math.inf)))
    with pytest.raises(ValidationError):
        UGapEb({"a": 0.0})
    with pytest.raises(ValidationError):
        UGapEb({"a": "best"})
