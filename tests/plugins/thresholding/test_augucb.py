"""AugUCB (Mukherjee et al. 2017, Algorithm 1, variant "paper") against hand-computed constants and steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.thresholding.augucb import AugUCB, AugUCBSchedule
from armlab.testing import pull_once, start_policy

ONE = np.array([0])

# Small case used below: K = 20, T = 400, rho = 1/3, tau = 0.5.
#   A = ln((3/16) * 20 * ln 20) = ln(11.2340) = 2.418945
#   M = floor(0.5 * log2(400 / e)) = floor(3.60) = 3
#   round 0: psi = 400 / (128 A^2) = 0.534070, ln(T) = 5.991465,
#            ell = ceil(2 * 0.534070 * 5.991465) = ceil(6.3997) = 7, N_0 = 20 * 7 = 140,
#            s_i = sqrt(rho psi ln(T) / 4) * sqrt((v_i + 1) / n_i) = 0.516387 * sqrt((v_i + 1) / n_i)
#   round 1: eps = 1/2, psi = 0.267035, ln(200) = 5.298317, ell = ceil(5.659) = 6,
#            s_i = 0.343370 * sqrt((v_i + 1) / n_i)
#   round 2: eps = 1/4, ell = ceil(2 * 0.133518 * 4.605170 / 0.25) = ceil(4.919) = 5
K, T = 20, 400
C0, C1 = 0.516387, 0.343370


def test_constants_at_t_10000_k_100():
    schedule = AugUCBSchedule(10_000, 100)
    assert schedule.a_constant == pytest.approx(4.458373, abs=1e-6)
    assert schedule.last_round == 5
    one = np.ones(1)
    assert schedule.psi(one)[0] == pytest.approx(3.93040, abs=1e-5)
    assert schedule.log_term(one)[0] == pytest.approx(9.21034, abs=1e-5)
    assert schedule.ell(one)[0] == 73
    assert [int(schedule.ell(np.array([2.0**-m]))[0]) for m in range(1, 7)] == [67, 62, 57, 51, 46, 40]


def test_radius_coefficient_at_t_10000_k_100(threshold_problem):
    # sqrt(rho psi_0 ln(T) / 4) = 1.736864
    policy = AugUCB()
    stats = start_policy(policy, threshold_problem([0.4] * 100, 10_000))
    assert policy.round_end[0] == 7300
    assert policy.radius(stats, np.ones((1, 100)))[0, 0] == pytest.approx(1.736864, rel=1e-6)


def test_small_case_constants(threshold_problem):
    schedule = AugUCBSchedule(T, K)
    assert schedule.a_constant == pytest.approx(2.418945, abs=1e-6)
    assert schedule.last_round == 3
    assert [int(schedule.ell(np.array([e]))[0]) for e in (1.0, 0.5, 0.25)] == [7, 6, 5]
    policy, stats = _setup(threshold_problem, np.full(K, 0.4))
    assert policy.round_end[0] == 140
    assert policy.radius(stats, np.full((1, K), 4))[0, 0] == pytest.approx(C0 / 2, abs=1e-6)


def _setup(threshold_problem, means):
    policy = AugUCB()
    stats = start_policy(policy, threshold_problem(means, T))
    return policy, stats


def test_first_pulls_then_first_elimination_at_t_k_plus_1(threshold_problem):
    # arm 0: reward 2.0 (gap 1.5); arm 2 exactly at tau; the rest 0.45 (gap 0.05); no noise
    rewards = np.full(K, 0.45)
    rewards[0], rewards[1], rewards[2] = 2.0, 0.1, 0.5
    policy, stats = _setup(threshold_problem, rewards)
    assert [pull_once(policy, stats, rewards.__getitem__) for _ in range(K)] == list(range(K))
    assert stats.active[0, 0]  # no elimination during the initial pulls
    # t = 21: keys gap - 2 * 0.516387 (n = 1, v = 0); arm 2 (gap 0) is lowest
    assert pull_once(policy, stats, rewards.__getitem__) == 2
    # now checked: arm 0 has 1.5 > 2 s = 1.0328, arm 1 has 0.4 < 1.0328
    assert not stats.active[0, 0] and stats.active[0, 1]
    # t = 22: arm 2 has key -1.0328 / sqrt(2) = -0.730, the 0.45 arms -0.983 -> lowest index 3
    assert pull_once(policy, stats, rewards.__getitem__) == 3


@pytest.mark.parametrize(("variance", "n_kept", "n_dropped"), [(0.0, 6, 7), (0.44, 9, 10)])
def test_elimination_uses_the_variance_aware_radius(variance, n_kept, n_dropped, threshold_problem):
    # gap 0.4: eliminated once 0.4 > 2 * 0.516387 * sqrt((v + 1) / n):
    # v = 0 -> n >= 7 (n = 6 gives 0.4216); v = 0.44 -> 2 s = 1.2393 / sqrt(n) -> n >= 10
    policy, stats = _setup(threshold_problem, np.full(K, 0.45))
    for n, expect_active in ((n_kept, True), (n_dropped, False)):
        stats.counts[0] = 30
        stats.counts[0, 1] = n
        stats.means[0] = 0.45
        stats.means[0, 1] = 0.1
        stats.m2[0] = 0.0
        stats.m2[0, 1] = variance * n
        stats.observed[0] = stats.dispatched[0] = int(stats.counts.sum())
        stats.active[0] = True
        policy.update(stats, ONE, np.array([1]), np.array([0.1]))
        assert stats.active[0, 1] == expect_active, n


def test_round_reset_at_n_m_and_only_up_to_m(threshold_problem):
    policy, stats = _setup(threshold_problem, np.full(K, 0.45))
    stats.counts[0] = 7
    stats.means[0] = 0.45
    stats.active[0, :2] = False  # |B| = 18
    stats.observed[0] = stats.dispatched[0] = 139
    policy.select(stats)
    assert policy.round[0] == 0 and policy.eps[0] == 1.0
    stats.observed[0] = stats.dispatched[0] = 140  # t >= N_0 = 140
    policy.select(stats)
    assert policy.round[0] == 1 and policy.eps[0] == 0.5
    assert policy.round_end[0] == 140 + 18 * 6
    radius = policy.radius(stats, np.full((1, K), 4))
    assert radius[0, 5] == pytest.approx(C1 * math.sqrt(1 / 4), abs=1e-6)
    policy.select(stats)  # repeatable: no second reset without new pulls
    assert policy.round[0] == 1
    for t in (248, 1000, 2000, 3000, 4000):
        stats.observed[0] = stats.dispatched[0] = t
        policy.select(stats)
    # resets while m <= M = 3: rounds 0 -> 1 -> 2 -> 3 -> 4, then never again
    assert policy.round[0] == 4 and policy.eps[0] == 1 / 16


def test_round_reset_can_trigger_eliminations(threshold_problem):
    # arm 1 (gap 0.4, n = 3, v = 0): round 0 keeps it (2 s = 1.0328 / sqrt 3 = 0.596),
    # round 1 drops it (2 s = 0.68674 / sqrt 3 = 0.3965 < 0.4)
    policy, stats = _setup(threshold_problem, np.full(K, 0.45))
    stats.counts[0] = 7
    stats.counts[0, 1] = 3
    stats.means[0] = 0.45
    stats.means[0, 1] = 0.1
    stats.observed[0] = stats.dispatched[0] = int(stats.counts.sum())  # 136
    policy.update(stats, ONE, np.array([3]), np.array([0.45]))
    assert stats.active[0, 1]
    stats.observed[0] = stats.dispatched[0] = 140
    policy.select(stats)
    policy.update(stats, ONE, np.array([3]), np.array([0.45]))
    assert not stats.active[0, 1]


def test_all_arms_eliminated_stops_and_freezes_the_output(simulate_gaussian):
    # means 0 or 1 without noise: gap 0.5 > 1.0328 / sqrt(n) once n >= 5, so every arm is
    # eliminated after its fifth pull: the last one at t = 20 * 5 = 100
    means = [0.0] * 10 + [1.0] * 10
    sim = simulate_gaussian(AugUCB, means, T, variances=0.0, replicas=2, checkpoints=[100, 200, 400])
    assert sim.stopped_at.tolist() == [100, 100]
    assert (sim.stats[0].counts == 5).all()
    assert not sim.stats[0].active.any()
    assert (sim.policies[0].select(sim.stats[0]) == STOPPED).all()
    assert (sim.cp_error == 0).all()  # the frozen output stays correct at later checkpoints
    answer = sim.policies[0].recommend(sim.stats[0])
    assert answer.tolist() == [[m >= 0.5 for m in means]] * 2


def test_needs_five_arms(threshold_problem):
    with pytest.raises(ConfigError, match="K >= 5"):
        start_policy(AugUCB(), threshold_problem([0.4] * 4, T))
    start_policy(AugUCB(), threshold_problem([0.4] * 5, T))


def test_needs_budget_above_k(threshold_problem):
    with pytest.raises(ConfigError, match="budget 20 is too small"):
        start_policy(AugUCB(), threshold_problem([0.4] * 20, 20))


def test_pending_pulls_shrink_the_selection_width_only(threshold_problem):
    policy, stats = _setup(threshold_problem, np.full(K, 0.45))
    stats.counts[0] = 4
    stats.means[0] = 0.45
    stats.observed[0] = stats.dispatched[0] = 80
    first = int(policy.select(stats)[0])
    assert first == 0  # all keys equal: lowest index
    stats.dispatch(ONE, np.array([0]))  # in flight: arm 0's width now uses n = 5
    assert int(policy.select(stats)[0]) == 1
    policy.update(stats, ONE, np.array([1]), np.array([0.45]))
    assert stats.active[0].all()
