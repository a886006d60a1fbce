"""VBR (provisional): rejection by upper confidence bound on the Successive Rejects schedule."""

from __future__ import annotations

import pytest

from armlab.errors import ConfigError
from armlab.plugins.fixed_budget.successive_rejects import SuccessiveRejects
from armlab.plugins.fixed_budget.vbr import VBR
from armlab.testing import problem_with_truth, pull_once, start_policy

# K = 3, n = 9: n_k = 2, 3, so every arm has 2 pulls when the first rejection happens
MEANS = [1.0, 0.5, 0.6]
SPREAD = [0.01, 1.0, 0.01]  # arm 1: low mean but very uncertain; arm 2: a bit better, certain


def rewards():
    """Rewards mean -+ spread alternating per arm (a fresh sequence per call)."""
    seen: dict[int, int] = {}

    def reward(arm: int) -> float:
        seen[arm] = seen.get(arm, 0) + 1
        return MEANS[arm] + (SPREAD[arm] if seen[arm] % 2 == 0 else -SPREAD[arm])

    return reward


def first_rejection(policy) -> list[bool]:
    stats = start_policy(policy, problem_with_truth(MEANS, budget=9))
    reward = rewards()
    for _ in range(7):  # phase 1 (6 pulls) and the first pull of phase 2, which triggers the rejection
        pull_once(policy, stats, reward)
    return stats.active[0].tolist()


def test_rejects_the_smallest_upper_bound_not_the_smallest_mean():
    # upper bounds mean + 1.96 s / sqrt(2): arm 1 0.5 + 1.96 * sqrt(2) / sqrt(2) = 2.46, arm 2 0.6 + 0.0196
    assert first_rejection(VBR()) == [True, True, False]
    assert first_rejection(SuccessiveRejects()) == [True, False, True]


def test_a_tiny_gamma_behaves_like_successive_rejects():
    assert first_rejection(VBR({"gamma": 1e-9})) == [True, False, True]


def test_gamma_must_be_positive():
    with pytest.raises(ValueError, match="gamma"):
        VBR({"gamma": 0})


def test_is_labelled_provisional():
    assert "PROVISIONAL" in VBR.__doc__ and "UNVERIFIED" in VBR.__doc__


def test_budget_must_exceed_the_number_of_arms():
    with pytest.raises(ConfigError, match="vbr"):
        start_policy(VBR(), problem_with_truth(MEANS, budget=3))
