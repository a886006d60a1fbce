"""The ``[metrics] confidence`` observer: eq. (3) per replica and step, completion times."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

from armlab import run_experiment
from armlab.config import FeedbackConfig, validate_config
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.gcp.arm_rules import PACTopM
from armlab.plugins.gcp.confidence import completion_time, confidence_lower_bound
from armlab.plugins.gcp.confidence_observer import ConfidenceObserver, confidence_of
from armlab.plugins.sources.random_bernoulli import RandomBernoulli
from armlab.problem import Objective, Problem
from armlab.stats import ArmStats


def bernoulli_stats(counts, successes):
    stats = ArmStats(1, len(counts))
    stats.counts[0] = counts
    stats.means[0] = np.asarray(successes) / np.maximum(counts, 1)
    return stats


def problem(objective=Objective.BEST_ARM, reward_range=(0.0, 1.0), **kw):
    return Problem(objective=objective, budget=100, n_arms=3, reward_range=reward_range, **kw)


def test_bernoulli_statistics_use_the_beta_posterior():
    stats = bernoulli_stats([98, 98, 98], [59, 49, 39])  # posterior means 0.6, 0.5, 0.4
    rho = confidence_of(problem(), stats, np.array([0]))
    assert rho[0] == pytest.approx(confidence_lower_bound([0.6, 0.5, 0.4], [98] * 3, 1))
    top2 = confidence_of(problem(Objective.TOP_M, top_m=2), stats, np.array([0]))
    assert top2[0] == pytest.approx(confidence_lower_bound([0.6, 0.5, 0.4], [98] * 3, 2))


def test_unbounded_rewards_use_the_normal_approximation():
    stats = ArmStats(1, 3)
    for arm, rewards in enumerate([[1.0, 3.0, 2.0], [0.0, 1.0], [5.0]]):
        for r in rewards:
            stats.observe(np.array([0]), np.array([arm]), np.array([r]))
    rho = confidence_of(problem(reward_range=(-np.inf, np.inf)), stats, np.array([0]))
    # means (2, 0.5, 5), sds (1, 0.7071, -); arm 2 has one reward: t = 0 (tail 1/2)
    expected = confidence_lower_bound([2.0, 0.5, 5.0], [3, 2, 0], 1, posterior_sds=[1.0, np.sqrt(0.5), 0.0])
    assert rho[0] == pytest.approx(expected) and np.isfinite(rho[0])


def test_threshold_problems_use_the_threshold_as_gap_location():
    stats = bernoulli_stats([98, 98, 98], [79, 49, 19])  # posterior means 0.8, 0.5, 0.2
    rho = confidence_of(problem(Objective.THRESHOLD, threshold=0.4), stats, np.array([0]))
    sds = np.sqrt(np.array([0.16, 0.25, 0.16]))
    assert rho[0] == pytest.approx(max(0.0, 1 - ndtr(-np.sqrt(98) * np.array([0.4, 0.1, 0.2]) / sds).sum()))


class Recorder:
    """Records eq. (3) for every replica after every step (the batch definition's input)."""

    def __init__(self):
        self.path = []

    def after_step(self, sim):
        self.path.append(confidence_of(sim.problems[0], sim.stats[0], np.arange(sim.stats[0].replicas)))

    def summary(self):
        return {}


def test_streaming_observer_matches_the_batch_definition():
    replicas, budget = np.arange(12), 900
    source = RandomBernoulli({"n_arms": 4})
    source.reset(replicas, 5)
    prob = Problem(objective=Objective.BEST_ARM, budget=budget, n_arms=4, truth=source.truth,
                   reward_range=(0.0, 1.0), source=source.name)
    observer, recorder = ConfidenceObserver(level=0.9, hold=30), Recorder()
    sim = Simulation(policy_factory=lambda: PACTopM({"warmup_per_arm": 2}), sources=[source],
                     problems=[prob], allocator=Single(), feedback=FeedbackConfig(), seed=5,
                     replicas=replicas, checkpoints=[300, 600, budget], observers=[observer, recorder])
    while not sim.finished:
        sim.step()
    path = np.stack(recorder.path, axis=1)
    assert path.shape == (12, budget)
    expected = completion_time(path, level=0.9, hold=30)
    summary = observer.summary()
    assert 0 < observer.clock.completed.sum() < 12  # both outcomes occur on this instance set
    assert observer.clock.times(budget)[:, 0].tolist() == expected.tolist()
    assert summary["completion_time_median"] == np.median(expected)
    assert summary["completion_time_mean"] == pytest.approx(expected.mean())
    assert summary["not_completed_fraction"] == pytest.approx(np.mean(expected == budget))
    assert summary["confidence_mean"] == pytest.approx(path[:, [299, 599, budget - 1]].mean(axis=0))
    assert summary["confidence_stderr"][0] == pytest.approx(path[:, 299].std(ddof=1) / np.sqrt(12))


def experiment(**updates):
    data = {
        "name": "conf", "seed": 2, "replicas": 8, "checkpoints": [200, 400, 600],
        "problem": {"objective": "best-arm", "budget": 600},
        "source": {"plugin": "random-bernoulli", "n_arms": 4},
        "metrics": {"confidence": True, "confidence_level": 0.95, "confidence_hold": 50},
        "policies": [{"plugin": "pac", "warmup_per_arm": 5}],
    }
    data.update(updates)
    return validate_config(data)


def test_summary_keys_through_run_experiment():
    entry = run_experiment(experiment())["policies"]["pac"]
    assert entry["confidence_level"] == 0.95 and entry["confidence_hold"] == 50
    assert len(entry["confidence_mean"]) == len(entry["confidence_stderr"]) == 3
    assert all(0.0 <= v <= 1.0 for v in entry["confidence_mean"])
    assert entry["confidence_mean"][-1] > entry["confidence_mean"][0]
    assert 50 < entry["completion_time_median"] <= 600
    assert 0.0 <= entry["not_completed_fraction"] < 1.0
    plain = run_experiment(experiment(metrics={}))["policies"]["pac"]
    assert "confidence_mean" not in plain


def test_batched_feedback_freezes_the_bound_between_releases():
    cfg = experiment(feedback={"delay_model": "batch", "delay": 100}, checkpoints=[150, 199, 600])
    entry = run_experiment(cfg)["policies"]["pac"]
    # trials 100..199 see only the first batch: the bound at 150 equals the one at 199
    assert entry["confidence_mean"][0] == entry["confidence_mean"][1]
    instant = run_experiment(experiment(checkpoints=[150, 199, 600]))["policies"]["pac"]
    assert instant["confidence_mean"][0] != instant["confidence_mean"][1]


def test_metrics_table_validation():
    with pytest.raises(Exception, match="confidence_level"):
        experiment(metrics={"confidence": True, "confidence_level": 1.5})
    with pytest.raises(Exception, match="metrics.levels: unknown field"):
        experiment(metrics={"levels": 3})
