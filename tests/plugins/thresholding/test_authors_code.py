"""The authors'-code variants (``variant = "authors-code"``) against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.thresholding import CSAR, UCBE, UCBEV, AugUCB
from armlab.plugins.thresholding.augucb import AuthorsCodeSchedule
from armlab.plugins.thresholding.csar import authors_code_phase_lengths
from armlab.problem import Objective
from armlab.testing import pull_once, start_policy

ONE = np.array([0])

CODE = {"variant": "authors-code"}


def test_every_variant_defaults_to_the_paper():
    for cls in (AugUCB, UCBE, UCBEV, CSAR):
        assert cls().params.variant == "paper"


# -- AugUCB -----------------------------------------------------------------------------------
# K = 20, T = 500, tau = 0.5, rho_v = 1/3, rho_mu = 1/8, round 0 (eps = 1):
#   psi = T / (K ln K) = 500 / (20 ln 20) = 8.345205,  ln(T) = 6.214608,  ln(psi T) = 8.336295
#   ell_0 = ceil(2 psi ln T) = ceil(103.724) = 104, N_0 = 20 * 104 = 2080 (> T: no reset)
#   s = sqrt((rho_v psi ln T / 4) v / n + (rho_v ln(psi T) / 4) / n) = sqrt((4.321848 v + 0.694691) / n)
#   c = sqrt(rho_mu psi ln T / (2 n)) = sqrt(3.241386 / n)
K, T = 20, 500


def _augucb(threshold_problem, means=None):
    policy = AugUCB(CODE)
    stats = start_policy(policy, threshold_problem(np.full(K, 0.45) if means is None else means, T))
    return policy, stats


def test_augucb_schedule_constants():
    schedule = AuthorsCodeSchedule(T, K)
    one = np.ones(1)
    assert schedule.psi(one)[0] == pytest.approx(8.345205, abs=1e-6)
    assert schedule.ell(one)[0] == 104
    assert schedule.last_round == 3
    # at the published scale the first round outlasts the budget: K ell_0 = 100 * 401 > 10000
    assert AuthorsCodeSchedule(10_000, 100).ell(one)[0] == 401


def test_augucb_radius_and_key_by_hand(threshold_problem):
    policy, stats = _augucb(threshold_problem)
    assert policy.round_end[0] == K * 104
    stats.counts[0] = 20
    stats.counts[0, :3] = [4, 20, 25]
    stats.means[0] = 0.45
    stats.means[0, :3] = [0.1, 0.62, 0.5]
    stats.m2[0] = 0.0
    stats.m2[0, 1] = 0.1 * 20  # biased variance v = 0.1
    stats.observed[0] = stats.dispatched[0] = int(stats.counts.sum())
    s = policy.radius(stats, stats.counts)[0]
    assert s[0] == pytest.approx(math.sqrt(0.694691 / 4), rel=1e-5)
    assert s[1] == pytest.approx(math.sqrt((0.4321848 + 0.694691) / 20), rel=1e-5)
    # key |mean - tau| - 2 s: arm 0: 0.4 - 0.833481; arm 1: 0.12 - 0.474737; arm 2: 0 - 2 sqrt(0.694691/25)
    key = -policy.index(stats)[0]
    np.testing.assert_allclose(key[:3], [0.4 - 0.833481, 0.12 - 0.474737, -2 * math.sqrt(0.694691 / 25)], rtol=1e-5)
    assert int(policy.select(stats)[0]) == 0  # -0.4335 is the lowest


@pytest.mark.parametrize(("n", "v", "kept", "why"), [
    (4, 0.0, True, "2s = 0.8335, 2c = 1.8004 > 0.4"),
    (20, 0.0, False, "variance test: 2s = 0.3727 < 0.4"),
    (20, 0.1, True, "2s = 0.4747, 2c = 0.8052 > 0.4"),
    (81, 10.0, True, "2s = 1.4726, 2c = 0.40009 > 0.4"),
    (82, 10.0, False, "mean test: 2c = 0.39764 < 0.4 (2s = 1.4636)"),
])
def test_augucb_two_elimination_tests(n, v, kept, why, threshold_problem):
    policy, stats = _augucb(threshold_problem)
    stats.counts[0] = 30
    stats.counts[0, 1] = n
    stats.means[0] = 0.45
    stats.means[0, 1] = 0.1  # gap 0.4, below tau
    stats.m2[0, 1] = v * n
    stats.observed[0] = stats.dispatched[0] = int(stats.counts.sum())
    # a result for another arm: every active arm is tested, not only the one pulled
    policy.update(stats, ONE, np.array([5]), np.array([0.45]))
    assert stats.active[0, 1] == kept, why
    assert stats.active[0, 5]


def test_augucb_elimination_above_tau_too(threshold_problem):
    policy, stats = _augucb(threshold_problem)
    stats.counts[0] = 20
    stats.means[0] = 0.45
    stats.means[0, 2] = 0.9  # mean - s > tau + s: gap 0.4 > 2 s = 2 sqrt(0.694691 / 20) = 0.3727
    stats.observed[0] = stats.dispatched[0] = 400
    policy.update(stats, ONE, np.array([2]), np.array([0.9]))
    assert not stats.active[0, 2] and stats.active[0].sum() == K - 1


def test_augucb_no_elimination_during_the_first_pulls(threshold_problem):
    rewards = np.full(K, 0.45)
    rewards[0] = 5.0
    policy, stats = _augucb(threshold_problem, rewards)
    assert [pull_once(policy, stats, rewards.__getitem__) for _ in range(K)] == list(range(K))
    assert stats.active[0].all()
    # t = K + 1: arm 1..19 have key 0.05 - 2 sqrt(0.694691) = -1.617, arm 0 4.5 - 1.667: pull arm 1,
    # then the tests run: arm 0 (gap 4.5 > 2 s = 1.667) goes
    assert pull_once(policy, stats, rewards.__getitem__) == 1
    assert not stats.active[0, 0]


def test_augucb_reset_uses_the_authors_psi(threshold_problem):
    policy, stats = _augucb(threshold_problem)
    stats.counts[0] = 5
    stats.means[0] = 0.45
    stats.active[0, :4] = False  # |B| = 16
    policy.round_end[0] = 100
    stats.observed[0] = stats.dispatched[0] = 100
    policy.select(stats)
    # eps = 1/2: psi = 4.172603, ln(250) = 5.521461, ell = ceil(2 psi ln(250) / 0.5) = ceil(92.154) = 93
    assert policy.round[0] == 1 and policy.eps[0] == 0.5
    assert policy.round_end[0] == 100 + 16 * 93


def test_augucb_paper_needs_five_arms_the_code_does_not(threshold_problem):
    with pytest.raises(ConfigError, match="K >= 5"):
        start_policy(AugUCB(), threshold_problem([0.4] * 4, 100))
    start_policy(AugUCB(CODE), threshold_problem([0.4] * 4, 100))


# -- UCBE -------------------------------------------------------------------------------------
# means 0.2, 0.45, 0.6, 0.4, 0.4 (the last arm at 0.4), T = 105, tau = 0.5: the authors sum over
# the arms whose mean differs from the last arm's, 0-2: H1 = 1/0.09 + 1/0.0025 + 1/0.01 = 511.111,
# a = (T - K) / H1 = 100 / 511.111 = 0.195652; the paper adds 2 / 0.01: a = 100 / 711.111
UCBE_MEANS = [0.2, 0.45, 0.6, 0.4, 0.4]


@pytest.mark.parametrize(("params", "expected"), [
    (CODE, 0.195652), ({}, 100 / 711.111), ({**CODE, "a_scale": 4.0}, 4 * 0.195652),
])
def test_ucbe_oracle_a(threshold_problem, params, expected):
    policy = UCBE(params)
    start_policy(policy, threshold_problem(UCBE_MEANS, 105))
    assert policy.a[0] == pytest.approx(expected, rel=1e-5)


def test_ucbe_code_refuses_best_arm_and_degenerate_instances(threshold_problem):
    with pytest.raises(ConfigError, match="thresholding code"):
        start_policy(UCBE(CODE), threshold_problem(UCBE_MEANS, 105, objective=Objective.BEST_ARM))
    with pytest.raises(ConfigError, match="no term"):
        start_policy(UCBE(CODE), threshold_problem([0.4, 0.4, 0.4], 105))
    with pytest.raises(ConfigError, match="zero gap"):
        start_policy(UCBE(CODE), threshold_problem([0.5, 0.6, 0.4], 105))


# -- UCBEV ------------------------------------------------------------------------------------
# means 0.3, 0.55, 0.4 (last arm 0.4: left out), standard deviations 0.2, 0.3, 0.1 (variances
# 0.04, 0.09, 0.01), T = 100, K = 3, tau = 0.5.  The code's sigma is sqrt(sd): 0.447214, 0.547723;
# gaps 0.2, 0.05:
#   (0.447214 + sqrt(0.2 + 16/3 0.2))^2 / 0.04   = 1.572677^2 / 0.04   =  61.8328
#   (0.547723 + sqrt(0.3 + 16/3 0.05))^2 / 0.0025 = 1.300496^2 / 0.0025 = 676.5151
#   H = 738.3479, a = (8/9)(T - 2K)/H = (8/9) 94 / 738.3479 = 0.113166
UCBEV_MEANS, UCBEV_VARIANCES = [0.3, 0.55, 0.4], [0.04, 0.09, 0.01]


@pytest.mark.parametrize(("params", "expected"), [
    (CODE, 0.113166), ({**CODE, "a_scale": 256.0}, 256 * 0.113166), ({**CODE, "a": 2.0}, 2.0),
])
def test_ucbev_oracle_a(threshold_problem, params, expected):
    policy = UCBEV(params)
    start_policy(policy, threshold_problem(UCBEV_MEANS, 100, variances=UCBEV_VARIANCES))
    assert policy.a[0] == pytest.approx(expected, rel=1e-5)


def test_ucbev_code_index_by_hand(threshold_problem):
    policy = UCBEV({**CODE, "a": 0.5})
    stats = start_policy(policy, threshold_problem(UCBEV_MEANS, 100, variances=UCBEV_VARIANCES))
    stats.counts[0] = [1, 4, 2]
    stats.means[0] = [0.3, 0.55, 0.4]
    stats.m2[0] = [0.0, 0.08, 0.02]  # biased v = 0, 0.02, 0.01
    stats.observed[0] = stats.dispatched[0] = 7
    # width sqrt(2 a v / n) + 7 a / (3 n - 1):
    # arm 0: 0 + 3.5 / 2 = 1.75 -> 0.2 - 1.75 = -1.55
    # arm 1: sqrt(0.02 / 4) + 3.5 / 11 = 0.070711 + 0.318182 -> 0.05 - 0.388893 = -0.338893
    # arm 2: sqrt(0.01 / 2) + 3.5 / 5 = 0.070711 + 0.7 -> 0.1 - 0.770711 = -0.670711
    np.testing.assert_allclose(-policy.index(stats)[0], [-1.55, -0.338893, -0.670711], rtol=1e-5)
    assert int(policy.select(stats)[0]) == 0


def test_ucbev_code_pulls_each_arm_once_first(threshold_problem):
    policy = UCBEV({**CODE, "a": 0.5})
    rewards = [0.3, 0.55, 0.9]
    stats = start_policy(policy, threshold_problem(rewards, 100))
    arms = [pull_once(policy, stats, rewards.__getitem__) for _ in range(4)]
    assert arms[:3] == [0, 1, 2]
    # then by the index (n = 1, v = 0: width 1.75): 0.2, 0.05, 0.4 - 1.75 -> arm 1
    assert arms[3] == 1


def test_ucbev_code_fixes_squared_and_b():
    with pytest.raises(ValidationError, match="squared and b"):
        UCBEV({**CODE, "squared": False})
    with pytest.raises(ValidationError, match="squared and b"):
        UCBEV({**CODE, "b": 2.0})


# -- CSAR -------------------------------------------------------------------------------------
# K = 4, T = 29: logK = 1/2 + (1 + 1/2 + 1/3 + 1/4) = 2.583333;
# n_k = ceil(25 / (2.583333 (5 - k))), k = 0..3: ceil(1.936, 2.419, 3.226, 4.839) = 2, 3, 4, 5
REWARDS = [0.1, 0.45, 0.8, 0.58]


def test_csar_code_schedule():
    assert authors_code_phase_lengths(29, 4).tolist() == [2, 3, 4, 5]
    # T = 10000, K = 100: logK = 5.687378, n_0 = ceil(9900 / (5.687378 * 101)) = ceil(17.23) = 18
    lengths = authors_code_phase_lengths(10_000, 100)
    assert lengths[0] == 18 and lengths[-1] == math.ceil(9900 / (2 * (0.5 + sum(1 / i for i in range(1, 101)))))


def test_csar_code_rejects_only_below_tau(threshold_problem):
    policy = CSAR(CODE)
    stats = start_policy(policy, threshold_problem(REWARDS, 29))
    arms = [pull_once(policy, stats, REWARDS.__getitem__) for _ in range(16)]
    # phase 0: every arm to 2 pulls, reject arm 0 (lowest mean below tau); phase 1: arms 1-3 to 3,
    # reject arm 1; phases 2 and 3: arms 2, 3 to 4 and 5, nothing below tau, nothing rejected;
    # after phase K - 1 the replica stops with 15 of the 29 pulls used
    assert arms == [0, 1, 2, 3] * 2 + [1, 2, 3] + [2, 3] * 2 + [STOPPED]
    assert stats.active[0].tolist() == [False, False, True, True]
    assert policy.recommend(stats)[0].tolist() == [False, False, True, True]


def test_csar_code_answer_is_the_active_arms_above_tau(threshold_problem):
    policy = CSAR(CODE)
    stats = start_policy(policy, threshold_problem(REWARDS, 29))
    for _ in range(9):
        pull_once(policy, stats, REWARDS.__getitem__)
    assert not stats.active[0, 0]  # rejected after phase 0
    stats.means[0, 0] = 0.7  # a rejected arm stays out of the answer
    stats.means[0, 1] = 0.5  # an active one at tau is in (>=)
    assert policy.recommend(stats)[0].tolist() == [False, True, True, True]


def test_csar_code_keeps_every_arm_when_none_is_below_tau(threshold_problem):
    means = [0.6, 0.7, 0.8, 0.9]
    policy = CSAR(CODE)
    stats = start_policy(policy, threshold_problem(means, 29))
    arms = [pull_once(policy, stats, means.__getitem__) for _ in range(21)]
    assert arms == [0, 1, 2, 3] * 5 + [STOPPED]  # 5 pulls each: the schedule's last n_k
    assert stats.active[0].all()
