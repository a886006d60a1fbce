"""Reduced-scale check of the greedy-confidence-pursuit paper's main single-bandit ordering: Bayes completes before PAC."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.gcp.arm_rules import BayesTopM, PACTopM
from armlab.plugins.gcp.confidence_observer import ConfidenceObserver
from armlab.plugins.sources.random_bernoulli import RandomBernoulli
from armlab.problem import Objective, Problem

pytestmark = pytest.mark.slow


def completion_times(policy_cls, n_arms, replicas, budget, seed):
    source = RandomBernoulli({"n_arms": n_arms})
    ids = np.arange(replicas)
    source.reset(ids, seed)
    problem = Problem(objective=Objective.BEST_ARM, budget=budget, n_arms=n_arms, truth=source.truth,
                      reward_range=source.reward_range, source=source.name)
    observer = ConfidenceObserver(level=0.98, hold=100)
    sim = Simulation(policy_factory=policy_cls, sources=[source], problems=[problem], allocator=Single(),
                     feedback=FeedbackConfig(), seed=seed, replicas=ids, checkpoints=[budget],
                     observers=[observer])
    while not sim.finished:
        sim.step()
    return observer.clock.times(budget)[:, 0].astype(float)


def test_bayes_completes_before_pac_on_random_bernoulli_bandits():
    # 30 ten-armed bandits from the greedy-confidence-pursuit paper's generator, the same instances and outcome
    # sequences for both rules; runs not complete by the horizon count as the horizon
    bayes = completion_times(BayesTopM, 10, 30, 2500, seed=1)
    pac = completion_times(PACTopM, 10, 30, 2500, seed=1)
    diff = bayes - pac
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert diff.mean() < -2 * se
    assert np.median(bayes) < np.median(pac)
