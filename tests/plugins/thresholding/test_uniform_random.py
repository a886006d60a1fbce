"""UA (Mukherjee et al.'s uniform baseline): a uniformly random arm per step, a pure function of (seed, replica, step)."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from armlab.plugins.policies.uniform import Uniform
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


def _start(replicas, k=10, seed=0, ids=None):
    policy = Uniform({"order": "random"})
    ids = np.arange(replicas) if ids is None else ids
    problem = Problem(objective="threshold", budget=1000, n_arms=k, threshold=0.5)
    policy.reset(problem, len(ids), KeyedRandom(seed, "policy", 0, replicas=ids))
    return policy, ArmStats(len(ids), k)


def test_same_key_same_arms_and_repeatable():
    first, stats = _start(50)
    second, _ = _start(50)
    arms = first.select(stats)
    assert np.array_equal(arms, second.select(stats))
    assert np.array_equal(arms, first.select(stats))  # no new data: same arms


def test_arms_depend_on_step_seed_and_replica():
    policy, stats = _start(200)
    before = policy.select(stats)
    stats.dispatched += 1
    assert not np.array_equal(before, policy.select(stats))
    other, _ = _start(200, seed=1)
    stats.dispatched -= 1
    assert not np.array_equal(before, other.select(stats))
    alone, one = _start(1, ids=np.array([17]))
    assert alone.select(one)[0] == before[17]


def test_draws_are_uniform_over_arms():
    policy, stats = _start(4000)
    counts = np.bincount(policy.select(stats), minlength=10)
    assert sps.chisquare(counts).pvalue > 1e-3
    assert (counts > 0).all()


def test_only_active_arms_are_drawn():
    policy, stats = _start(2000)
    stats.active[:, [0, 3, 9]] = False
    arms = policy.select(stats)
    assert not np.isin(arms, [0, 3, 9]).any()
    counts = np.bincount(arms, minlength=10)[[1, 2, 4, 5, 6, 7, 8]]
    assert sps.chisquare(counts).pvalue > 1e-3


def test_round_robin_stays_the_default():
    assert Uniform().params.order == "round-robin"
