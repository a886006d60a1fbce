"""The greedy-confidence-pursuit paper's single-bandit arm rules: Bayes (Alg. 2) and PAC (LUCB1 as used there)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.gcp.arm_rules import BayesTopM, PACTopM


@pytest.mark.parametrize("cls", [BayesTopM, PACTopM])
def test_warm_up_is_round_robin_counting_pending_pulls(cls, start_rule):
    policy = cls({"warmup_per_arm": 2})
    stats = start_rule(policy, n_arms=3)
    arms = []
    for _ in range(6):
        arm = int(policy.select(stats)[0])
        arms.append(arm)
        stats.dispatch(np.array([0]), np.array([arm]))  # results stay pending
    assert arms == [0, 1, 2, 0, 1, 2]


def test_pac_index_by_hand(fill_counts, start_rule):
    # counts (20, 10, 10), successes (14, 5, 2): posterior means (15/22, 1/2, 1/4), gap location
    # 0.5909, gaps (0.0909, 0.0909, 0.3409); t = 40, delta = 0.05:
    # beta_j = sqrt(ln(5 * 3 * 40^4 / (4 * 0.05)) / (2 t_j)) = (0.6905, 0.9766, 0.9766)
    # index = beta - gap = (0.5996, 0.8856, 0.6356) -> arm 1
    policy = PACTopM({"warmup_per_arm": 0})
    stats = start_rule(policy, n_arms=3)
    fill_counts(stats, [20, 10, 10], [14, 5, 2])
    assert policy.select(stats).tolist() == [1]
    # with arm 1 as well sampled as arm 0, the far arm 2 wins on its width
    fill_counts(stats, [20, 20, 10], [14, 10, 2])
    log_term = math.log(5 * 3 * 50**4 / (4 * 0.05))
    means = np.array([15 / 22, 11 / 22, 3 / 12])
    index = np.sqrt(log_term / (2 * np.array([20, 20, 10]))) - np.abs(means - (means[0] + means[1]) / 2)
    assert policy.select(stats).tolist() == [int(np.argmax(index))] == [2]


def test_bayes_score_on_its_own_posterior_sample(fill_counts, start_rule):
    policy = BayesTopM({"warmup_per_arm": 0})
    stats = start_rule(policy, n_arms=4, replicas=50, top_m=2)
    counts, successes = np.array([40, 30, 20, 10]), np.array([30, 18, 9, 2])
    fill_counts(stats, counts, successes)
    # the policy's draw is a pure function of (replica, trials dispatched): redo it here
    shape = stats.counts.shape
    sample = policy.rng.beta(stats.dispatched, np.broadcast_to(1.0 + successes, shape),
                             np.broadcast_to(1.0 + counts - successes, shape))
    ordered = np.sort(sample, axis=1)[:, ::-1]
    location = (ordered[:, 1] + ordered[:, 2]) / 2  # between the 2nd and 3rd largest
    score = np.sqrt(counts) * np.abs(sample - location[:, None]) / np.sqrt(sample * (1 - sample))
    assert policy.select(stats).tolist() == np.argmin(score, axis=1).tolist()
    assert len(set(policy.select(stats).tolist())) > 1  # the sampling spreads the pulls
    literal = BayesTopM({"warmup_per_arm": 0, "normalize_by_sd": False})
    start_rule(literal, n_arms=4, replicas=50, top_m=2)
    unnormalized = np.sqrt(counts) * np.abs(sample - location[:, None])
    assert literal.select(stats).tolist() == np.argmin(unnormalized, axis=1).tolist()


def test_bayes_focuses_on_the_boundary_arms(fill_counts, start_rule):
    policy = BayesTopM({"warmup_per_arm": 0})
    stats = start_rule(policy, n_arms=4, replicas=200)
    fill_counts(stats, [100] * 4, [90, 85, 10, 10])
    assert set(policy.select(stats).tolist()) == {0, 1}


def test_bayes_exploration_pulls_the_widest_posterior(fill_counts, start_rule):
    policy = BayesTopM({"warmup_per_arm": 0, "exp_rate": 1.0})
    stats = start_rule(policy, n_arms=3, replicas=20)
    fill_counts(stats, [100, 100, 10], [90, 10, 5])
    assert set(policy.select(stats).tolist()) == {2}


def test_recommendation_is_the_map_group(fill_counts, start_rule):
    policy = PACTopM()
    stats = start_rule(policy, n_arms=3)
    # empirical means (1.0, 0.7, 0.1) but posterior means (2/3, 71/102, 11/102)
    fill_counts(stats, [1, 100, 100], [1, 70, 10])
    assert policy.recommend(stats).tolist() == [1]
    top2 = PACTopM()
    stats = start_rule(top2, n_arms=3, top_m=2)
    fill_counts(stats, [1, 100, 100], [1, 70, 10])
    assert top2.recommend(stats).tolist() == [[True, True, False]]


@pytest.mark.parametrize("cls", [BayesTopM, PACTopM])
def test_configuration_errors(cls, start_rule):
    with pytest.raises(ConfigError, match="rewards in \\[0, 1\\]"):
        start_rule(cls(), reward_range=(-math.inf, math.inf))
    with pytest.raises(ConfigError, match="warmup_per_arm = 10 .* 3 arms uses 30 trials"):
        start_rule(cls(), n_arms=3, budget=30)
    with pytest.raises(ConfigError, match="m = 3 must be smaller"):
        start_rule(cls(), n_arms=3, top_m=3)
