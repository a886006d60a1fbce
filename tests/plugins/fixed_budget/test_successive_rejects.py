"""Successive Rejects: the phase schedule (hand-computed vector), hand-run cases, edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.fixed_budget.successive_rejects import SuccessiveRejects, logbar, sr_phase_ends, sr_phase_lengths
from armlab.plugins.fixed_budget.vbr import VBR
from armlab.plugins.interfaces import STOPPED
from armlab.testing import problem_with_truth, pull_once, start_policy

ONE = np.array([0])


def test_schedule_matches_the_sheet_vector():
    lengths = sr_phase_lengths(10000, 100)
    assert logbar(100) == pytest.approx(4.68738, abs=1e-5)
    assert lengths.size == 99 and lengths[0] == 22 and lengths[-1] == 1057
    assert sr_phase_ends(10000, 100)[-1] == 9962  # total pulls, 38 of the budget unused


@pytest.mark.parametrize(("budget", "n_arms"), [(3, 2), (6, 5), (101, 100), (1000, 64), (777, 13), (20000, 64)])
def test_schedule_fits_the_budget(budget, n_arms):
    lengths, ends = sr_phase_lengths(budget, n_arms), sr_phase_ends(budget, n_arms)
    assert (lengths >= 1).all() and (np.diff(lengths) >= 0).all()
    assert (np.diff(ends) >= 0).all() and ends[-1] <= budget


def test_hand_run_rejects_the_lowest_mean_after_each_phase(alternating, run_to_end):
    # K = 4, n = 20: logbar = 19/12, n_k = ceil(16 / (logbar (5 - k))) = 3, 4, 6; phases end at 12, 15, 19
    means = [0.9, 0.1, 0.5, 0.3]
    policy = SuccessiveRejects()
    stats = start_policy(policy, problem_with_truth(means, budget=20))
    arms = run_to_end(policy, stats, alternating(means))
    assert arms == [0, 1, 2, 3] * 3 + [0, 2, 3] + [0, 2] * 2
    assert stats.active[0].tolist() == [True, False, True, False]  # arm 1, then arm 3 rejected
    assert policy.select(stats)[0] == STOPPED
    assert policy.recommend(stats)[0] == 0


def test_anytime_answer_is_the_best_surviving_mean(alternating):
    means = [0.2, 0.9, 0.5, 0.3]
    policy = SuccessiveRejects()
    stats = start_policy(policy, problem_with_truth(means, budget=20))
    reward = alternating(means)
    for _ in range(13):  # phase 1 done (arm 0 rejected), one pull into phase 2
        pull_once(policy, stats, reward)
    stats.means[0, 0] = 5.0  # a rejected arm never comes back, whatever its mean
    assert policy.recommend(stats)[0] == 1


def test_ties_reject_the_lowest_index_and_the_answer_is_the_survivor(run_to_end):
    policy = SuccessiveRejects()
    stats = start_policy(policy, problem_with_truth([0.5, 0.5, 0.5], budget=30))
    run_to_end(policy, stats, lambda arm: 0.5)
    assert stats.active[0].tolist() == [False, True, True]  # arm 0 rejected first
    assert policy.recommend(stats)[0] == 2  # the final rejection takes arm 1, not the largest-mean rule


def test_phases_without_pulls_reject_several_arms_at_once(run_to_end):
    # n = K + 1: every n_k = 1, so all phases end after the first round of pulls
    means = [0.1, 0.7, 0.3, 0.9, 0.5]
    policy = SuccessiveRejects()
    stats = start_policy(policy, problem_with_truth(means, budget=6))
    arms = run_to_end(policy, stats, lambda arm: means[arm])
    assert arms == [0, 1, 2, 3, 4]
    assert stats.active[0].tolist() == [False, True, False, True, False]
    assert policy.recommend(stats)[0] == 3


def test_budget_must_exceed_the_number_of_arms():
    with pytest.raises(ConfigError, match=r"n > K"):
        start_policy(SuccessiveRejects(), problem_with_truth([0.5, 0.4, 0.3], budget=3))


def test_pending_results_count_in_the_schedule_but_unobserved_arms_are_not_rejected():
    # K = 3, n = 9: n_k = 2, 3; phase 1 ends after 6 pulls.  Arm 2's results are still in flight.
    policy = SuccessiveRejects()
    stats = start_policy(policy, problem_with_truth([0.5, 0.4, 0.9], budget=9))
    for _ in range(6):
        arm = policy.select(stats)
        stats.dispatch(ONE, arm)
    assert stats.pending[0].tolist() == [2, 2, 2]
    for arm, reward in [(0, 0.5), (0, 0.5), (1, 0.4)]:
        stats.observe(ONE, np.array([arm]), np.array([reward]))
        policy.update(stats, ONE, np.array([arm]), np.array([reward]))
    assert policy.select(stats)[0] == 0  # phase 2 starts: arm 1 (lowest observed mean) is rejected
    assert stats.active[0].tolist() == [True, False, True]


class CoarseKeys(SuccessiveRejects):
    """Two keys that tie often, so the second one decides."""

    def rejection_keys(self, stats):
        return [(stats.counts % 2).astype(float), np.where(stats.counts > 0, stats.means, np.inf)]


def rejection_order(policy, stats, rows):
    """The arms of ``rows`` in rejection order, by a sort: active ones by their keys, then
    lowest index; inactive ones last."""
    inactive = ~stats.active[rows]
    index = np.broadcast_to(np.arange(stats.n_arms), inactive.shape)
    keys = [key[rows] for key in reversed(policy.rejection_keys(stats))]
    return np.lexsort([index, *keys, inactive], axis=-1)


@pytest.mark.parametrize("cls", [SuccessiveRejects, VBR, CoarseKeys])
def test_the_rejected_arm_is_the_head_of_the_rejection_order(cls):
    rng = np.random.default_rng(4)
    replicas, k = 400, 6
    policy = cls()
    stats = start_policy(policy, problem_with_truth([0.5] * k, budget=100), replicas=replicas)
    stats.counts[:] = rng.integers(0, 3, size=(replicas, k))  # unobserved arms: +inf keys
    stats.means[:] = np.where(stats.counts > 0, rng.integers(0, 3, size=(replicas, k)) / 2, 0.0)  # ties
    stats.m2[:] = np.where(stats.counts > 1, rng.integers(0, 2, size=(replicas, k)) / 4, 0.0)
    stats.active[:] = rng.random((replicas, k)) < 0.7
    stats.active[:, 5] = True  # at least one active arm
    rows = np.arange(0, replicas, 3)
    np.testing.assert_array_equal(policy.rejected_arm(stats, rows), rejection_order(policy, stats, rows)[:, 0])
