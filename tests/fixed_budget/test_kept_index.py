"""The GapE family's index kept between steps equals the index recomputed from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.complexity import midpoint_gaps, top_m_gaps
from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.fixed_budget.gape import AGapEV, GapE, GapEV
from armlab.plugins.fixed_budget.gape_index import empirical_gaps
from armlab.plugins.gcp.agapev_topm import AGapEVTopM
from armlab.plugins.sources.simulated import Bernoulli
from armlab.problem import Objective, Problem

R, K, BUDGET = 30, 8, 240


def simulation(cls, params, top_m, feedback):
    source = Bernoulli({"means": np.linspace(0.2, 0.8, K).tolist()})  # 0/1 rewards: ties
    ids = np.arange(R)
    source.reset(ids, 0)
    objective = Objective.TOP_M if top_m > 1 else Objective.BEST_ARM
    problem = Problem(objective=objective, budget=BUDGET, n_arms=K, top_m=top_m, truth=source.truth,
                      source=source.name, reward_range=source.reward_range)
    return Simulation(policy_factory=lambda: cls(params), sources=[source], problems=[problem],
                      allocator=Single(), feedback=feedback, seed=3, replicas=ids, checkpoints=[BUDGET])


@pytest.mark.parametrize("feedback", [FeedbackConfig(), FeedbackConfig(delay=3)], ids=["immediate", "delayed"])
@pytest.mark.parametrize("top_m", [1, 2])
@pytest.mark.parametrize(("cls", "params"), [
    (GapE, {"a": 1.0, "b": 1.0}),
    (GapEV, {"a": 0.5, "b": 1.0}),
    (AGapEV, {}),
    (AGapEV, {"gaps": "gape"}),
    (AGapEVTopM, {}),  # prior pseudo-observations; the width ignores pending pulls
    (AGapEVTopM, {"gaps": "gape", "warmup_per_arm": 2}),
])
def test_kept_index_equals_the_recomputed_index(cls, params, top_m, feedback):
    sim = simulation(cls, params, top_m, feedback)
    policy, stats = sim.policies[0], sim.stats[0]
    while not sim.finished:
        sim.step()
        if sim.step_index == 120:  # statistics changed outside the engine are noticed
            stats.counts[:, 1] += 2
            stats.observed += 2
            stats.dispatched += 2
        if (stats.counts > 0).all():
            assert np.array_equal(policy.current_index(stats), policy.index(stats))


@pytest.mark.parametrize("top_m", [1, 3])
def test_gaps_equal_the_complexity_module(top_m):
    rng = np.random.default_rng(5)
    means = np.round(rng.normal(size=(200, 7)), 1)  # rounding makes ties, also at the top
    np.testing.assert_array_equal(empirical_gaps(means, top_m, "midpoint"), midpoint_gaps(means, top_m))
    np.testing.assert_array_equal(empirical_gaps(means, top_m, "gape"), top_m_gaps(means, top_m))
