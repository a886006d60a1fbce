"""AugUCB's earlier authors'-code variant (``variant = "authors-code-v1"``, their
``AugmentedUCB``) against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.thresholding import AugUCB
from armlab.plugins.thresholding.augucb import AuthorsCodeV1Schedule
from armlab.testing import start_policy

ONE = np.array([0])
V1 = {"variant": "authors-code-v1"}
# K = 20, T = 500, tau = 0.5, rho = 1/3 so rho_v = 2/3, rho_mu = 1/8:
#   psi = T / ln K = 500 / 2.995732 = 166.904100 (every round)
#   round 0 (eps = 1): L = ln(psi T) = ln(83452.05) = 11.332027, ell_0 = ceil(2 L) = ceil(22.664) = 23,
#     N_0 = 20 * 23 = 460 (< T: round 1 can start)
#   s = sqrt(rho_v L / 4 (v + 1) / n) = sqrt(1.888671 (v + 1) / n),  c = sqrt(rho_mu L / (2 n)) = sqrt(0.708252 / n)
#   round 1 (eps = 1/2): L = ln(psi T / 4) = 9.945733, ell_1 = ceil(2 L / 0.5) = ceil(39.783) = 40
K, T = 20, 500


def _augucb(threshold_problem, means=None):
    policy = AugUCB(V1)
    stats = start_policy(policy, threshold_problem(np.full(K, 0.45) if means is None else means, T))
    return policy, stats


def test_schedule_constants_by_hand():
    schedule = AuthorsCodeV1Schedule(T, K)
    one, half = np.ones(1), np.full(1, 0.5)
    assert schedule.psi(one)[0] == schedule.psi(half)[0] == pytest.approx(166.904100, abs=1e-6)
    assert schedule.log_term(one)[0] == pytest.approx(11.332027, abs=1e-6)
    assert schedule.log_term(half)[0] == pytest.approx(9.945733, abs=1e-6)
    assert schedule.ell(one)[0] == 23 and schedule.ell(half)[0] == 40
    assert schedule.last_round == 3
    # at the published scale (T = 10000, K = 100): L = ln(10^8 / ln 100) = 16.893501, ell_0 = 34
    assert AuthorsCodeV1Schedule(10_000, 100).ell(one)[0] == 34


def test_radii_by_hand():
    schedule, one = AuthorsCodeV1Schedule(T, K), np.ones(1)
    s = schedule.radius(one, np.array([0.0, 0.1, 0.0]), np.array([4, 20, 25]))
    np.testing.assert_allclose(s, [math.sqrt(1.888671 / 4), math.sqrt(1.888671 * 1.1 / 20),
                                   math.sqrt(1.888671 / 25)], rtol=1e-6)
    c = schedule.mean_radius(one, np.array([4, 17, 18]))
    np.testing.assert_allclose(c, [math.sqrt(0.708252 / 4), math.sqrt(0.708252 / 17), math.sqrt(0.708252 / 18)],
                               rtol=1e-6)


def test_key_counts_the_radius_once(threshold_problem):
    """Arm 2 (gap 0, n = 25) against arm 0 (gap 0.45, n = 4): with ``- s_i`` arm 2 is lowest,
    with the other variants' ``- 2 s_i`` arm 0 would be."""
    policy, stats = _augucb(threshold_problem)
    assert policy.round_end[0] == K * 23
    stats.counts[0] = 20
    stats.counts[0, [0, 2]] = [4, 25]
    stats.means[0] = 0.45
    stats.means[0, [0, 2]] = [0.05, 0.5]
    stats.m2[0] = 0.0
    stats.observed[0] = stats.dispatched[0] = int(stats.counts.sum())
    # keys: arm 0: 0.45 - 0.687145 = -0.237145; arm 2: 0 - 0.274858; others 0.05 - 0.307301 = -0.257301
    key = -policy.index(stats)[0]
    np.testing.assert_allclose(key[:3], [-0.237145, -0.257301, -0.274858], atol=1e-6)
    assert int(policy.select(stats)[0]) == 2
    # the same statistics with the key of "authors-code": 0.45 - 2 s_0 is the lowest
    assert 0.45 - 2 * 0.687145 < 0.05 - 2 * 0.307301 and 0.45 - 2 * 0.687145 < -2 * 0.274858


@pytest.mark.parametrize(("n", "v", "kept", "why"), [
    (17, 0.0, True, "2c = 0.40822 > 0.4, 2s = 0.66663"),
    (18, 0.0, False, "mean test: 2c = 0.39671 < 0.4"),
    (18, 10.0, False, "mean test, whatever the variance (2s = 2.16366)"),
    (47, 0.0, False, "both: 2s = 0.40092 > 0.4 but 2c = 0.24551"),
])
def test_two_elimination_tests(threshold_problem, n, v, kept, why):
    policy, stats = _augucb(threshold_problem)
    stats.counts[0] = 30
    stats.counts[0, 1] = n
    stats.means[0] = 0.45
    stats.means[0, 1] = 0.1  # gap 0.4, below tau
    stats.m2[0, 1] = v * n
    stats.observed[0] = stats.dispatched[0] = int(stats.counts.sum())
    policy.update(stats, ONE, np.array([5]), np.array([0.45]))
    assert stats.active[0, 1] == kept, why
    assert stats.active[0, 5]


def test_round_reset_keeps_psi_and_uses_the_new_log(threshold_problem):
    policy, stats = _augucb(threshold_problem)
    stats.counts[0] = 23
    stats.means[0] = 0.45
    stats.active[0, :4] = False  # |B| = 16
    stats.observed[0] = stats.dispatched[0] = 460  # t = N_0
    policy.select(stats)
    assert policy.round[0] == 1 and policy.eps[0] == 0.5
    assert policy.round_end[0] == 460 + 16 * 40


def test_runs_on_four_arms_and_refuses_one(threshold_problem):
    start_policy(AugUCB(V1), threshold_problem([0.4] * 4, 100))
    for variant in ("authors-code", "authors-code-v1"):
        with pytest.raises(ConfigError, match="K >= 2"):
            start_policy(AugUCB({"variant": variant}), threshold_problem([0.4], 100))


def test_run_in_the_engine_finds_the_arms_above_tau(simulate_gaussian):
    means = [0.1, 0.2, 0.3, 0.7, 0.8, 0.9]
    sim = simulate_gaussian(lambda: AugUCB(V1), means, 3000, variances=0.01, replicas=4)
    answer = sim.policies[0].recommend(sim.stats[0])
    assert answer.tolist() == [[m >= 0.5 for m in means]] * 4
