"""The sets UGapE and LUCB1 carry between steps give exactly the sorted definitions.

Values are rounded so that exact ties (the tie rules' hard cases) are frequent.
"""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.fixed_confidence.common import TopSet, argbest, set_mask, smallest_m
from armlab.plugins.fixed_confidence.lucb1 import LUCB1, lucb_width
from armlab.plugins.fixed_confidence.ugape import (
    UGapEb,
    UGapEc,
    gap_indices,
    select_arm,
)
from armlab.plugins.interfaces import STOPPED
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

R, K = 40, 12
CHANCE = np.linspace(0.05, 0.95, K)  # of reward 1, per arm


def drift(rng, values, share=0.3):
    """Move a share of the entries, on a coarse grid (ties stay common)."""
    moved = rng.random(values.shape) < share
    return np.where(moved, np.round(values + rng.normal(0, 0.3, values.shape), 1), values)


@pytest.mark.parametrize("need", [1, 3, 11])
def test_exact_top_set_matches_a_stable_sort(need):
    rng = np.random.default_rng(need)
    top = TopSet(R, K, need)
    values = np.round(rng.normal(size=(R, K)), 1)
    for _ in range(60):
        values = drift(rng, values)
        rows = np.sort(rng.choice(R, size=rng.integers(1, R + 1), replace=False))
        inside, worst, outside = top.update(values[rows], rows)
        assert np.array_equal(set_mask(top.members(rows), K), smallest_m(-values[rows], need))
        assert np.array_equal(worst[0], inside.min(axis=0))
        others = np.where(set_mask(top.members(rows), K), -np.inf, values[rows]).max(axis=1)
        assert np.array_equal(outside, others)


def test_top_set_with_spares_holds_the_largest_values():
    rng = np.random.default_rng(7)
    need, size = 4, 7
    top = TopSet(R, K, need, size=size)
    values = np.round(rng.normal(size=(R, K)), 1)
    for _ in range(60):
        values = drift(rng, values, share=0.5)
        rows = np.arange(R)
        inside, ranked, outside = top.update(values, rows)
        largest = -np.sort(-values, axis=1)[:, :need]
        assert np.array_equal(ranked[size - need :][::-1].T, largest)
        assert np.array_equal(np.sort(inside, axis=0), ranked)
        assert (outside <= ranked[size - need]).all()


def problem(m, objective=Objective.TOP_M, epsilon=0.0, budget=5000):
    return Problem(objective=objective, budget=budget, n_arms=K, top_m=m, epsilon=epsilon, delta=0.1,
                   source="test", reward_range=(0.0, 1.0))


def reference_ugape(policy, stats):
    """``(arm, J, B_J)`` of every replica by the sorted definitions."""
    if isinstance(policy, UGapEb):
        beta = policy.span * np.sqrt(policy.a[:, None] / stats.counts)
    else:
        log_term = np.log(4.0 * K * stats.observed.astype(np.float64) ** 3 / policy.delta)
        beta = policy.span * np.sqrt(policy.params.c * log_term[:, None] / stats.counts)
    upper, lower, _, chosen, b_set = gap_indices(stats.means, beta, policy.top_m)
    return select_arm(upper, lower, beta, chosen), chosen, b_set


def play(policy, stats, rng, arms):
    """Dispatch ``arms`` and fold in 0/1 rewards, as the engine does without delay."""
    rows = np.flatnonzero(arms >= 0)
    rewards = (rng.random(rows.size) < CHANCE[arms[rows]]).astype(float)
    stats.record(rows, arms[rows], rewards)
    policy.update(stats, rows, arms[rows], rewards)


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("cls", [UGapEb, UGapEc])
def test_ugape_choices_equal_the_sorted_definition(cls, m):
    rng = np.random.default_rng(m)
    policy = cls({"a": 0.5} if cls is UGapEb else {"c": 0.05})
    policy.reset(problem(m, epsilon=0.5), R, KeyedRandom(0, "policy", replicas=np.arange(R)))
    stats = ArmStats(R, K)
    for step in range(250):
        stopped = getattr(policy, "confident", np.zeros(R, dtype=bool)).copy()
        arms = policy.select(stats)
        if step >= K:
            arm, chosen, b_set = reference_ugape(policy, stats)
            live = arms != STOPPED
            assert np.array_equal(arms[live], arm[live])
            if cls is UGapEc:  # stops exactly when B_J < epsilon, answering J
                assert np.array_equal(live | stopped, stopped | (b_set >= 0.5))
                assert np.array_equal(policy.recommend(stats)[~stopped], chosen[~stopped])
        if step == 150:  # statistics changed outside the engine are noticed
            stats.counts[:, 0] += 3
            stats.observed += 3
            stats.dispatched += 3
        play(policy, stats, rng, arms)
    if cls is UGapEc:  # replicas stopped at different steps, so subsets were evaluated
        assert policy.confident.any()


def test_ugapeb_running_best_equals_the_sorted_definition():
    rng = np.random.default_rng(3)
    policy = UGapEb({"a": 0.2})
    policy.reset(problem(2), R, KeyedRandom(0, "policy", replicas=np.arange(R)))
    stats = ArmStats(R, K)
    best_b, best_set = np.full(R, np.inf), np.zeros((R, K), dtype=bool)
    for _ in range(200):
        play(policy, stats, rng, policy.select(stats))
        if (stats.counts > 0).all():
            _, chosen, b_set = reference_ugape(policy, stats)
            better = b_set < best_b
            best_b[better], best_set[better] = b_set[better], chosen[better]
    assert np.array_equal(policy.best_b, best_b)
    assert np.array_equal(policy.recommend(stats), best_set)


@pytest.mark.parametrize("m", [1, 3])
def test_lucb1_rounds_equal_the_sorted_definition(m):
    rng = np.random.default_rng(m)
    policy = LUCB1()
    policy.reset(problem(m, epsilon=0.6, budget=20000), R, KeyedRandom(0, "policy", replicas=np.arange(R)))
    stats = ArmStats(R, K)
    for _ in range(600):
        started, confident = policy.round_at.copy(), policy.confident.copy()
        arms = policy.select(stats)
        rows = np.flatnonzero(policy.round_at != started)
        if rows.size:
            means = stats.means[rows]
            width = lucb_width(stats.counts[rows], policy.rounds[rows][:, None], K, policy.delta)
            high = smallest_m(-means, m)
            no_tiebreak = np.zeros_like(means)
            h = argbest(means - width, no_tiebreak, high, largest=False)
            l = argbest(means + width, no_tiebreak, ~high, largest=True)
            assert np.array_equal(policy.pair[rows], np.stack([h, l], axis=1))
            index = np.arange(rows.size)
            done = (means + width)[index, l] - (means - width)[index, h] < policy.problem.epsilon
            assert np.array_equal(policy.confident[rows] & ~confident[rows], done)
            assert np.array_equal(policy.recommend(stats)[rows[done]], high[done])
        play(policy, stats, rng, arms)
    assert 0 < policy.confident.sum() < R
