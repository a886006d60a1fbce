"""GapE, GapE-V and A-GapE-V: oracle a against the heterogeneous-variance paper's reference vector, indices by
hand, edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins.fixed_budget.gape import AGapEV, GapE, GapEV
from armlab.plugins.fixed_budget.gape_index import (
    agapev_exploration,
    agapev_index,
    empirical_gaps,
    gapev_index,
)
from armlab.plugins.gcp.agapev_topm import AGapEVTopM
from armlab.plugins.gcp.arm_rules import PACTopM
from armlab.plugins.sources.heterogeneous_gaussian import HeterogeneousVarianceGaussian
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats
from armlab.testing import problem_with_truth, pull_once, start_policy


def base_instance_problem(budget: int = 5000) -> Problem:
    source = HeterogeneousVarianceGaussian({"n_arms": 64, "perturbation": "none"})
    source.reset(np.arange(2), seed=0)
    return Problem(objective=Objective.BEST_ARM, budget=budget, n_arms=64, truth=source.truth, source=source.name)


@pytest.mark.parametrize(("cls", "params", "a"), [
    (GapE, {}, 2.9863),  # 16 (n - K) / (H log2 K), H = 4407.7
    (GapEV, {}, 27.4085),  # (1024/9) (n - 2K) / (H^sigma log2 K), H^sigma = 3370.8
    (GapEV, {"theta": 1 / 8}, 3.8543),  # the alternative theta docs/algorithms/fixed-budget.md flags
    (GapE, {"rescale": False}, (4 / 9) * 4936 / 4407.7),  # Gabillon et al.'s a, not rescaled
    (GapE, {"a_scale": 2.0}, 2 * 2.9863),
])
def test_oracle_exploration_matches_the_paper_vector(cls, params, a):
    policy = cls(params)
    policy.reset(base_instance_problem(), 2, KeyedRandom(0, replicas=np.arange(2)))
    np.testing.assert_allclose(policy.b, 3.4674, rtol=1e-4)  # max_i mu_i + sigma_i sqrt(ln n)
    np.testing.assert_allclose(policy.a, a, rtol=1e-4)


def test_gape_pulls_each_arm_once_then_follows_its_index():
    means = [0.5, 0.4, 0.1]
    policy = GapE({"a": 1.0, "b": 1.0})
    stats = start_policy(policy, problem_with_truth(means, budget=100, with_truth=False))
    assert [pull_once(policy, stats, lambda arm: means[arm]) for _ in range(3)] == [0, 1, 2]
    stats.counts[0] = [4, 1, 9]
    # gaps (0.1, 0.1, 0.4); index sqrt(1 / T) - gap = (0.4, 0.9, -0.067)
    np.testing.assert_allclose(policy.index(stats)[0], [0.4, 0.9, 1 / 3 - 0.4])
    assert policy.select(stats)[0] == 1


def test_gapev_pulls_each_arm_twice_then_uses_the_bernstein_index(alternating):
    means = [0.5, 0.4, 0.1]
    policy = GapEV({"a": 1.0, "b": 2.0})
    stats = start_policy(policy, problem_with_truth(means, budget=100, with_truth=False))
    reward = alternating(means, 0.1)
    first = [pull_once(policy, stats, reward) for _ in range(6)]
    assert first == [0, 1, 2, 0, 1, 2]
    # T = 2, s^2 = 0.02, gaps (0.1, 0.1, 0.4): sqrt(2 * 0.02 / 2) + 7 * 2 / 3 - gap
    expected = np.sqrt(0.02) + 14 / 3 - np.array([0.1, 0.1, 0.4])
    np.testing.assert_allclose(policy.index(stats)[0], expected)
    assert policy.select(stats)[0] == 0


def test_gapev_index_formula():
    index = gapev_index(np.array([0.2]), np.array([0.5]), np.array([10.0]), a=3.0, b=2.0)
    assert index[0] == pytest.approx(np.sqrt(2 * 3 * 0.5 / 10) + 7 * 3 * 2 / (3 * 9) - 0.2)


def test_top_m_gaps_follow_the_gape_convention():
    means = np.array([[0.9, 0.8, 0.7, 0.5]])
    np.testing.assert_allclose(empirical_gaps(means, 2), [[0.2, 0.1, 0.1, 0.3]])  # the heterogeneous-variance paper's base instance
    np.testing.assert_allclose(empirical_gaps(means, 2, "midpoint"), [[0.15, 0.05, 0.05, 0.25]])


def test_agapev_index_by_hand():
    # midpoint gaps (0.1, 0.1); D+ = 0.1 + sqrt(1/8); v- = 0 for both arms (v < sqrt(2/3)), so
    # h = (16/3) / D+ each; a = (8/9)(100 - 4) / (2h) = 3.628429
    gaps = empirical_gaps(np.array([[0.6, 0.4]]), 1, "midpoint")
    var, counts = np.array([[0.1, 0.3]]), np.array([[4.0, 4.0]])
    a = (8 / 9) * 96 / (2 * (16 / 3) / (0.1 + np.sqrt(0.125)))
    assert agapev_exploration(gaps, var, counts, 100)[0] == pytest.approx(a) == pytest.approx(3.628429, rel=1e-6)
    expected = -0.1 + np.sqrt(2 * a * var[0] / 4) + 7 * a / 9
    np.testing.assert_allclose(agapev_index(gaps, var, counts, counts, 100)[0], expected)
    np.testing.assert_allclose(expected, [3.148046, 3.459853], rtol=1e-6)


def test_agapev_runs_on_live_sources_and_re_estimates_a(alternating):
    means = [0.6, 0.4, 0.5]
    policy = AGapEV()
    stats = start_policy(policy, problem_with_truth(means, budget=200, with_truth=False))
    reward = alternating(means, 0.2)
    arms = [pull_once(policy, stats, reward) for _ in range(40)]
    assert arms[:6] == [0, 1, 2, 0, 1, 2]
    assert set(arms[6:]) <= {0, 1, 2}


def test_agapev_extension_points():
    class Prior(AGapEV):
        """A subclass with valid statistics from the start and its own gaps."""

        name = "agapev-test"
        need = 0

        def gaps(self, means):
            return np.broadcast_to([1.0, 0.0, 0.0], means.shape)

    policy = Prior()
    problem = Problem(objective=Objective.BEST_ARM, budget=100, n_arms=3, source="test")
    policy.reset(problem, 1, KeyedRandom(0, replicas=np.arange(1)))
    assert policy.select(ArmStats(1, 3))[0] == 1  # no warm-up: the index (arm 0 has the big gap) decides


def test_top_m_objective(run_to_end):
    means = [0.9, 0.8, 0.7, 0.5]
    for policy in (GapE({"a": 1.0, "b": 1.0}), GapEV({"a": 1.0, "b": 1.0}), AGapEV()):
        stats = start_policy(policy, problem_with_truth(means, budget=200, objective=Objective.TOP_M, top_m=2,
                                                  with_truth=False))
        run_to_end(policy, stats, lambda arm: means[arm])
        assert policy.recommend(stats)[0].tolist() == [True, True, False, False]


@pytest.mark.parametrize("cls", [GapE, GapEV, AGapEV])
def test_top_m_must_be_smaller_than_k(cls):
    prob = problem_with_truth([0.5, 0.4], budget=100, objective=Objective.TOP_M, top_m=2)
    with pytest.raises(ConfigError, match=r"m < K"):
        start_policy(cls(), prob)


@pytest.mark.parametrize(("cls", "budget"), [(GapE, 3), (GapEV, 6), (AGapEV, 6)])
def test_budget_too_small(cls, budget):
    with pytest.raises(ConfigError, match=f"must exceed {budget}"):
        start_policy(cls(), problem_with_truth([0.5, 0.4, 0.3], budget=budget))


def test_oracle_inputs_are_refused_on_live_sources():
    live = problem_with_truth([0.5, 0.4, 0.3], budget=100, with_truth=False)
    with pytest.raises(ConfigError, match=r"gape.*reward bound b"):
        start_policy(GapE({"a": 1.0}), live)
    with pytest.raises(ConfigError, match=r"gapev.*true means"):
        start_policy(GapEV({"b": 1.0}), live)


def test_tied_best_arms_make_the_oracle_a_undefined():
    with pytest.raises(ConfigError, match=r"a = theta \(n - K\) / H is undefined.*Give the parameter `a`"):
        start_policy(GapE(), problem_with_truth([0.5, 0.5, 0.3], budget=100))


@pytest.mark.parametrize(("cls", "params"), [(GapE, {"a": 1.0, "b": 1.0}), (AGapEV, {}),
                                             (AGapEVTopM, {"warmup_per_arm": 2}), (PACTopM, {"warmup_per_arm": 2})])
def test_statistics_changed_outside_the_engine_are_noticed(cls, params, alternating):
    """The speed path (per-arm terms and gaps kept between steps) recomputes what it was not told of."""
    means = [0.8, 0.6, 0.5, 0.3]
    policy = cls(params)
    stats = start_policy(policy, problem_with_truth(means, budget=200, with_truth=False, reward_range=(0.0, 1.0)))
    reward = alternating(means, 0.2)
    for _ in range(30):
        pull_once(policy, stats, reward)
    stats.counts[0, 1] += 2  # as if two results of arm 1 had been folded in elsewhere
    stats.means[0, 1] = 0.9
    stats.observed += 2
    stats.dispatched += 2
    np.testing.assert_array_equal(policy.current_index(stats), policy.index(stats))
