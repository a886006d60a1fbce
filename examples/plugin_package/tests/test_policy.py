"""Tests of the ``epsilon-greedy`` policy: armlab's conformance checks plus hand-computed cases."""

import numpy as np

from armlab import ArmStats, Objective, Problem
from armlab.random import KeyedRandom
from armlab.testing import check_policy

from armlab_epsilon_greedy import EpsilonGreedy, armlab_register_policies


def _start(epsilon: float, replicas: int = 2, n_arms: int = 3) -> tuple[EpsilonGreedy, ArmStats]:
    policy = EpsilonGreedy({"epsilon": epsilon})
    problem = Problem(objective=Objective.REGRET, budget=100, n_arms=n_arms)
    policy.reset(problem, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
    return policy, ArmStats(replicas, n_arms)


def test_meets_the_armlab_policy_contract():
    check_policy(EpsilonGreedy)
    check_policy(EpsilonGreedy, {"epsilon": 0.5}, objective="regret", source="bernoulli")


def test_pulls_each_arm_once_counting_pending_pulls_then_the_best_mean():
    policy, stats = _start(epsilon=0.0)
    rows = np.arange(2)
    for arm in range(3):
        assert policy.select(stats).tolist() == [arm, arm]
        stats.dispatch(rows, np.array([arm, arm]))  # results still pending
    assert policy.select(stats).tolist() == [0, 0]  # nothing observed yet: lowest index
    for arm, rewards in enumerate([[0.2, 0.9], [0.7, 0.1], [0.5, 0.3]]):
        stats.observe(rows, np.array([arm, arm]), np.array(rewards))
    assert policy.select(stats).tolist() == [1, 0]


def test_epsilon_one_explores_uniformly():
    policy, stats = _start(epsilon=1.0, replicas=4000, n_arms=4)
    stats.counts[:] = 1  # every arm pulled once
    arms = policy.select(stats)
    shares = np.bincount(arms, minlength=4) / arms.size
    assert np.allclose(shares, 0.25, atol=4 * np.sqrt(0.25 * 0.75 / arms.size))


def test_registers_through_the_armlab_hook():
    assert armlab_register_policies() == [EpsilonGreedy]
    assert EpsilonGreedy.name == "epsilon-greedy"
