"""SHVar and SHAdaVar: stage allocations by hand, the forced phase, the bound's inflation factor."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.fixed_budget.sh_variance import SHAdaVar, SHVar, forced_stage_pulls, variance_inflation
from armlab.plugins.policies.sh import SequentialHalving
from armlab.testing import problem_with_truth, pull_once, start_policy


def test_shvar_allocates_a_stage_in_proportion_to_the_variances(alternating):
    # K = 4, n = 32: two stages of 16 pulls.  sigma^2 = (4, 1, 1, 2): one pull each (N = 0 ranks
    # first), then argmax sigma^2 / N with ties to the lower index; Lemma 1: N = 16 sigma^2 / 8.
    means = [0.9, 0.1, 0.5, 0.3]
    policy = SHVar()
    stats = start_policy(policy, problem_with_truth(means, budget=32, variances=[4.0, 1.0, 1.0, 2.0]))
    reward = alternating(means)
    arms = [pull_once(policy, stats, reward) for _ in range(16)]
    assert arms == [0, 1, 2, 3, 0, 0, 3, 0, 0, 1, 2, 3, 0, 0, 3, 0]
    assert stats.counts[0].tolist() == [8, 2, 2, 4]
    pull_once(policy, stats, reward)  # stage 2 starts with the better half
    assert stats.active[0].tolist() == [True, False, True, False]


def test_shvar_with_equal_variances_is_sequential_halving(alternating, run_to_end):
    means = [0.3, 0.8, 0.5, 0.1, 0.6, 0.4]  # K = 6 (not a power of two): 3 stages
    sequences = []
    for policy in (SHVar(), SequentialHalving()):
        stats = start_policy(policy, problem_with_truth(means, budget=60, variances=0.7))
        sequences.append(run_to_end(policy, stats, alternating(means, 0.2)))
        sequences.append(policy.recommend(stats).tolist())
    assert sequences[0] == sequences[2] and sequences[1] == sequences[3]


def test_shvar_pulls_an_arm_with_zero_variance_once_per_stage(run_to_end):
    means = [0.9, 0.5]
    policy = SHVar()
    stats = start_policy(policy, problem_with_truth(means, budget=10, variances=[0.0, 1.0]))
    assert run_to_end(policy, stats, lambda arm: means[arm]) == [0] + [1] * 9


def test_shvar_refuses_live_sources():
    with pytest.raises(ConfigError, match=r"shvar.*variances"):
        start_policy(SHVar(), problem_with_truth([0.5, 0.4], budget=100, with_truth=False))


def test_k_not_a_power_of_two_halves_with_ceilings(alternating):
    # K = 5: ceil(log2 5) = 3 stages of floor(30 / 3) = 10 pulls; survivors 5 -> 3 -> 2 -> 1
    means = [0.1, 0.9, 0.5, 0.7, 0.3]
    policy = SHVar()
    stats = start_policy(policy, problem_with_truth(means, budget=30, variances=0.5))
    survivors, reward = [], alternating(means)
    for _ in range(30):
        pull_once(policy, stats, reward)
        survivors.append(int(stats.active[0].sum()))
    assert survivors[9] == 5 and survivors[10] == 3 and survivors[20] == 2
    assert stats.active[0].tolist() == [False, True, False, True, False]
    assert policy.recommend(stats)[0] == 1


@pytest.mark.parametrize("cls", [SHVar, SHAdaVar])
def test_budget_too_small_for_a_stage_raises(cls):
    with pytest.raises(ConfigError, match="at least 15"):  # 3 stages x 5 arms
        start_policy(cls(), problem_with_truth([0.5, 0.4, 0.3, 0.2, 0.1], budget=14))


def test_forced_phase_length():
    assert 4 * math.log(20) + 1 == pytest.approx(12.9829, abs=1e-4)  # the paper's (fractional) length
    assert forced_stage_pulls(0.05) == 13
    assert forced_stage_pulls(0.5) == 4  # 4 ln 2 + 1 = 3.77: N - 1 = 3 > 2.77
    for delta in (0.5, 0.05, 1e-3, 1e-6):
        n = forced_stage_pulls(delta)
        assert n - 1 > 4 * math.log(1 / delta) >= n - 2  # the smallest count with a valid bound


def test_inflation_factor_matches_hand_computed_values():
    n = np.array([13, 14, 15, 20, 30, 50, 100, 200])
    expected = [1405.4, 25.05, 13.36, 4.86, 2.80, 1.98, 1.53, 1.33]
    np.testing.assert_allclose(variance_inflation(n, 0.05), expected, rtol=1e-4, atol=5e-3)  # values to 2 decimals


def test_inflation_is_infinite_where_the_bound_is_invalid():
    assert np.isinf(variance_inflation(np.array([0, 1, 2, 12]), 0.05)).all()  # N - 1 <= 4 ln 20


def test_shadavar_round_robin_for_13_pulls_then_the_largest_variance_bound(run_to_end):
    # K = 2 (one stage of 40 pulls): 26 forced pulls, then U / N with U = s^2 x inflation; arm 0's
    # sample variance is 10^4 times arm 1's, so every greedy pull goes to arm 0.
    means = [0.5, 0.4]
    policy = SHAdaVar()
    stats = start_policy(policy, problem_with_truth(means, budget=40))
    spread = {0: 1.0, 1: 0.01}
    seen = {0: 0, 1: 0}

    def reward(arm):
        seen[arm] += 1
        return means[arm] + (spread[arm] if seen[arm] % 2 else -spread[arm])

    arms = run_to_end(policy, stats, reward)
    assert arms == [0, 1] * 13 + [0] * 14


def test_shadavar_greedy_pull_by_hand():
    # after the forced phase (13 + 13 pulls), stage s^2 = (1, 100): U = s^2 x 1405.4 at N = 13
    def after_the_forced_phase(stage_m2):
        policy = SHAdaVar()
        stats = start_policy(policy, problem_with_truth([0.5, 0.4], budget=40))
        stats.counts[0] = [13, 13]
        stats.dispatched[0] = stats.observed[0] = 26
        policy.stage_n[0] = [13, 13]
        policy.stage_m2[0] = stage_m2  # unbiased s^2 = m2 / 12
        return policy, stats

    policy, stats = after_the_forced_phase([12.0, 1200.0])
    np.testing.assert_allclose(policy.variance_bounds()[0], [1405.4006, 140540.06], rtol=1e-6)
    assert policy.select(stats)[0] == 1
    policy, stats = after_the_forced_phase([12.0 * 101, 1200.0])  # now arm 0's bound is the larger one
    assert policy.select(stats)[0] == 0


def test_shadavar_stage_is_all_round_robin_when_it_is_short(alternating):
    # K = 4, n = 104: stage 1 has 52 = 4 x 13 pulls, all forced, whatever the rewards
    means = [0.9, 0.1, 0.5, 0.3]
    policy = SHAdaVar()
    stats = start_policy(policy, problem_with_truth(means, budget=104))
    reward = alternating(means, spread=0.3)
    arms = [pull_once(policy, stats, reward) for _ in range(52)]
    assert arms == [0, 1, 2, 3] * 13


def test_shadavar_delta_must_lie_in_0_1():
    with pytest.raises(ValueError, match="delta"):
        SHAdaVar({"delta": 1.0})
