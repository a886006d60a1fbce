"""Sequential Halving's kept per-arm values (stage pulls, SHVar / SHAdaVar ratios) give the
same run as recomputing them at every step, with and without results in flight."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.fixed_budget.sh_variance import SHAdaVar, SHVar
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem

R, K, BUDGET = 25, 9, 270


def recomputing(cls):
    """``cls`` with its kept values recomputed whole at every selection."""

    class Recomputing(cls):
        def select(self, stats):
            self._kept = False
            return super().select(stats)

    return Recomputing


def run(cls, params, source, feedback):
    ids = np.arange(R)
    source.reset(ids, 0)
    problem = Problem(objective=Objective.BEST_ARM, budget=BUDGET, n_arms=K, truth=source.truth,
                      source=source.name, reward_range=source.reward_range)
    sim = Simulation(policy_factory=lambda: cls(cls.Params.model_validate(params)), sources=[source],
                     problems=[problem], allocator=Single(), feedback=feedback, seed=5, replicas=ids,
                     checkpoints=[BUDGET])
    counts = []
    while not sim.finished:
        sim.step()
        counts.append(sim.stats[0].counts.copy())
    return np.array(counts), sim.cp_error.copy()


MEANS = [0.1, 0.3, 0.3, 0.45, 0.5, 0.55, 0.6, 0.7, 0.72]  # a tie, close gaps


@pytest.mark.parametrize("feedback", [
    FeedbackConfig(),
    FeedbackConfig(delay=0, delay_model="uniform", delay_max=3),
    FeedbackConfig(delay=3, delay_model="batch"),
], ids=["immediate", "uniform-delay", "batch"])
@pytest.mark.parametrize(("cls", "params", "source"), [
    (SequentialHalving, {}, lambda: Bernoulli({"means": MEANS})),
    (SHVar, {}, lambda: Gaussian({"means": MEANS, "variances": np.linspace(0.05, 0.6, K).tolist()})),
    (SHVar, {}, lambda: Bernoulli({"means": [0.0] + MEANS[1:]})),  # a zero variance
    (SHAdaVar, {}, lambda: Gaussian({"means": MEANS, "variances": np.linspace(0.05, 0.6, K).tolist()})),
    (SHAdaVar, {"delta": 0.5}, lambda: Bernoulli({"means": MEANS})),
], ids=["sh", "shvar", "shvar-zero-variance", "shadavar", "shadavar-bernoulli"])
def test_kept_values_give_the_recomputed_run(cls, params, source, feedback):
    kept_counts, kept_error = run(cls, params, source(), feedback)
    counts, error = run(recomputing(cls), params, source(), feedback)
    assert len(kept_counts) == len(counts)
    np.testing.assert_array_equal(kept_counts, counts)
    np.testing.assert_array_equal(kept_error, error)
