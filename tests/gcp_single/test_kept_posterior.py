"""The greedy-confidence-pursuit paper's arm rules keep their posterior (and PAC and agapev-topm their index terms) between
steps and skip the warm-up check once every arm is warmed up; runs equal those that recompute
all of it at every step."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.gcp.agapev_topm import AGapEVTopM
from armlab.plugins.gcp.arm_rules import BayesTopM, PACTopM
from armlab.plugins.sources.simulated import Bernoulli
from armlab.problem import Objective, Problem

R, K, BUDGET = 20, 8, 400


def recomputing(cls):
    """``cls`` with its posterior, kept index and warm-up state dropped before every selection."""

    class Recomputing(cls):
        def select(self, stats):
            self._warmed_up = False
            for kept in (self._posterior, getattr(self, "_kept", None)):  # agapev-topm's index
                if kept is not None:  # a KeptIndex without terms recomputes everything
                    kept.terms = np.empty(0)
            return super().select(stats)

    return Recomputing


def run(cls, feedback, tamper):
    source = Bernoulli({"means": np.linspace(0.2, 0.8, K).tolist()})
    ids = np.arange(R)
    source.reset(ids, 0)
    problem = Problem(objective=Objective.TOP_M, budget=BUDGET, n_arms=K, top_m=3, truth=source.truth,
                      source=source.name, reward_range=source.reward_range)
    sim = Simulation(policy_factory=lambda: cls({"warmup_per_arm": 3}), sources=[source], problems=[problem],
                     allocator=Single(), feedback=feedback, seed=2, replicas=ids, checkpoints=[BUDGET // 2, BUDGET])
    stats, counts = sim.stats[0], []
    while not sim.finished:
        sim.step()
        if tamper and sim.step_index == 150:  # statistics changed outside the engine are noticed
            stats.counts[:, 1] += 2
            stats.observed += 2
            stats.dispatched += 2
        counts.append(stats.counts.copy())
    return np.array(counts), sim.cp_error.copy()


@pytest.mark.parametrize("tamper", [False, True], ids=["engine", "tampered"])
@pytest.mark.parametrize("feedback", [FeedbackConfig(), FeedbackConfig(delay=3)], ids=["immediate", "delayed"])
@pytest.mark.parametrize("cls", [PACTopM, BayesTopM, AGapEVTopM])
def test_kept_posterior_gives_the_recomputed_run(cls, feedback, tamper):
    kept_counts, kept_error = run(cls, feedback, tamper)
    counts, error = run(recomputing(cls), feedback, tamper)
    np.testing.assert_array_equal(kept_counts, counts)
    np.testing.assert_array_equal(kept_error, error)
