"""The policies of ``armlab.plugins.policies`` (uniform, UCB1, sequential halving, Thompson) against their definitions (hand-computed) and one ordering."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab import run_experiment
from armlab.config import validate_config
from armlab.errors import ConfigError
from armlab.plugins.interfaces import STOPPED
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.policies.thompson import Thompson
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.selection import select_by_index
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

ONE = np.array([0])


def start(policy, n_arms, budget=100, objective=Objective.BEST_ARM, replicas=1, reward_range=(0.0, 1.0)):
    problem = Problem(objective=objective, budget=budget, n_arms=n_arms, reward_range=reward_range)
    policy.reset(problem, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
    return ArmStats(replicas, n_arms)


def pull(policy, stats, reward_of):
    """One step for replica 0: select, dispatch, observe ``reward_of(arm)``; return the arm."""
    arm = int(policy.select(stats)[0])
    if arm == STOPPED:
        return arm
    stats.dispatch(ONE, np.array([arm]))
    stats.observe(ONE, np.array([arm]), np.array([reward_of(arm)]))
    policy.update(stats, ONE, np.array([arm]), np.array([reward_of(arm)]))
    return arm


def test_uniform_is_round_robin_over_active_arms():
    policy = Uniform()
    stats = start(policy, 4)
    assert [pull(policy, stats, lambda a: 0.0) for _ in range(6)] == [0, 1, 2, 3, 0, 1]
    stats.active[0, 2] = False
    assert [pull(policy, stats, lambda a: 0.0) for _ in range(4)] == [3, 0, 1, 3]


def test_ucb1_index_by_hand():
    policy = UCB1()
    stats = start(policy, 3)
    rewards = {0: 0.5, 1: 0.9, 2: 0.1}
    assert [pull(policy, stats, rewards.get) for _ in range(3)] == [0, 1, 2]  # one pull each
    # n = 3: indices 0.5 + sqrt(2 ln 3), 0.9 + sqrt(2 ln 3), 0.1 + ... -> arm 1
    expected = np.array([0.5, 0.9, 0.1]) + math.sqrt(2 * math.log(3))
    assert np.allclose(policy.index(stats)[0], expected)
    assert pull(policy, stats, rewards.get) == 1
    # n = 4, N = (1, 2, 1): arm 0: 0.5 + sqrt(2 ln 4) = 2.165; arm 1: 0.9 + sqrt(ln 4) = 2.077
    assert policy.index(stats)[0] == pytest.approx([0.5 + math.sqrt(2 * math.log(4)), 0.9 + math.sqrt(math.log(4)),
                                                    0.1 + math.sqrt(2 * math.log(4))])
    assert pull(policy, stats, rewards.get) == 0


def test_ucb1_does_not_repeat_an_arm_whose_first_result_is_pending():
    policy = UCB1()
    stats = start(policy, 3)
    for arm in range(2):
        stats.dispatch(ONE, np.array([arm]))  # in flight, unobserved
    assert int(policy.select(stats)[0]) == 2
    stats.dispatch(ONE, np.array([2]))
    assert int(policy.select(stats)[0]) == 0  # nothing observed yet: fewest pulls, lowest index


def test_sequential_halving_schedule_and_stage_means_by_hand():
    # K = 4, n = 19: S = 2 stages of floor(19/2) = 9 pulls; one pull left over
    policy = SequentialHalving()
    stats = start(policy, 4, budget=19)
    stage1 = {0: 0.2, 1: 0.9, 2: 0.5, 3: 0.4}
    arms = [pull(policy, stats, stage1.get) for _ in range(9)]
    assert arms == [0, 1, 2, 3, 0, 1, 2, 3, 0]
    # stage 2 keeps ceil(4/2) = 2 arms with the largest stage means: 1 and 2; round robin
    stage2 = {1: 0.6, 2: 0.7}  # stage-2 samples alone decide: arm 2 wins although arm 1 leads overall
    arms = [pull(policy, stats, stage2.get) for _ in range(9)]
    assert arms == [1, 2, 1, 2, 1, 2, 1, 2, 1]
    assert stats.active[0].tolist() == [False, True, True, False]
    assert pull(policy, stats, stage2.get) == STOPPED  # 2 * 9 = 18 < 19: leftover unused
    assert int(policy.recommend(stats)[0]) == 2
    # cumulative means: arm 1 (2 x 0.9 + 5 x 0.6) / 7 = 0.686 > arm 2 (2 x 0.5 + 4 x 0.7) / 6 = 0.633
    assert stats.means[0, 1] == pytest.approx(4.8 / 7) and stats.means[0, 2] == pytest.approx(3.8 / 6)


def test_sequential_halving_refuses_a_budget_too_small():
    with pytest.raises(ConfigError, match=r"budget 20 is too small for 8 arms.*at least 24"):
        start(SequentialHalving(), 8, budget=20)


def test_sequential_halving_with_k_not_a_power_of_two():
    policy = SequentialHalving()
    stats = start(policy, 5, budget=30)  # S = 3 stages of 10: 5 -> 3 -> 2 -> 1
    value = {0: 0.1, 1: 0.2, 2: 0.3, 3: 0.4, 4: 0.5}
    while pull(policy, stats, value.get) != STOPPED:
        pass
    assert stats.dispatched[0] == 30
    assert int(policy.recommend(stats)[0]) == 4
    assert stats.active[0].sum() == 2  # the last stage holds 2 arms; the answer is its winner


def test_thompson_posterior_counts_and_binarized_rewards():
    policy = Thompson()
    stats = start(policy, 3, objective=Objective.REGRET)
    rows, arms = np.array([0]), np.array([1])
    for reward in (1.0, 0.0, 1.0):
        stats.dispatch(rows, arms)
        stats.observe(rows, arms, np.array([reward]))
        policy.update(stats, rows, arms, np.array([reward]))
    assert policy.successes[0].tolist() == [0, 2, 0] and policy.failures[0].tolist() == [0, 1, 0]
    for reward in (0.3,) * 200:  # fractional rewards become Bernoulli(0.3) successes
        stats.dispatch(rows, np.array([2]))
        stats.observe(rows, np.array([2]), np.array([reward]))
        policy.update(stats, rows, np.array([2]), np.array([reward]))
    assert 40 <= policy.successes[0, 2] <= 80


def test_thompson_follows_an_overwhelming_posterior():
    policy = Thompson()
    stats = start(policy, 3, objective=Objective.REGRET, replicas=50)
    policy.successes[:, 2] = 200
    policy.failures[:, :2] = 200
    stats.dispatched[:] = np.arange(50)
    assert (policy.select(stats) == 2).all()


def test_thompson_refuses_unbounded_rewards():
    with pytest.raises(ConfigError, match=r"rewards in \[0, 1\]"):
        start(Thompson(), 3, reward_range=(-math.inf, math.inf))


@pytest.mark.slow
def test_sequential_halving_beats_uniform_with_many_bad_arms():
    """32 arms, one best, three close, 28 poor (variance 1): SH spends its budget on the
    contenders, round robin wastes it; the heterogeneous-variance paper's ordering at reduced scale."""
    config = validate_config({
        "name": "sh-vs-unif", "seed": 5, "replicas": 600, "checkpoints": [1280],
        "problem": {"objective": "best-arm", "budget": 1280},
        "source": {"plugin": "gaussian", "means": [0.5] + [0.4] * 3 + [0.1] * 28, "variances": 1.0},
        "policies": [{"plugin": "sh"}, {"plugin": "uniform"}],
    })
    result = run_experiment(config)["policies"]
    sh, unif = result["sh"], result["uniform"]
    gap = unif["error_rate"][-1] - sh["error_rate"][-1]
    tolerance = 3 * math.hypot(sh["error_stderr"][-1], unif["error_stderr"][-1])
    assert gap > tolerance, (sh["error_rate"], unif["error_rate"])


@pytest.mark.parametrize("random_ties", [False, True])
def test_index_function_is_read_only_after_the_warm_up(random_ties):
    stats = ArmStats(4, 3)
    rng = KeyedRandom(0, "ties", replicas=np.arange(4)) if random_ties else None
    index = np.array([[0.1, 0.5, 0.5]] * 4)
    calls = []

    def index_now():
        calls.append(1)
        return index

    stats.counts[:2] = 1  # replicas 0 and 1 have seen every arm, 2 and 3 none
    stats.counts[2, 0] = 1
    assert select_by_index(stats, index_now, rng=rng).tolist() == select_by_index(stats, index, rng=rng).tolist()
    assert calls == [1]
    stats.counts[:2] = 0  # every replica in its warm-up: round robin, the index unread
    assert select_by_index(stats, index_now, rng=rng).tolist() == [0, 0, 1, 0]
    assert calls == [1]
