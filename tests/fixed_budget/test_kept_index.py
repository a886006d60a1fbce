"""The GapE family's index kept between steps equals the index recomputed from scratch, and
KeptIndex's step-by-step updates equal a recomputation of its arrays."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from armlab.complexity import midpoint_gaps, top_m_gaps
from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.fixed_budget.gape import AGapEV, GapE, GapEV
from armlab.plugins.fixed_budget.gape_index import KeptIndex, empirical_gaps
from armlab.plugins.gcp.agapev_topm import AGapEVTopM
from armlab.plugins.gcp.arm_rules import PACTopM
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem

R, K, BUDGET = 30, 8, 240


def simulation(cls, params, top_m, feedback, size=(R, K, BUDGET), bernoulli=True):
    """One bandit of evenly spaced means; Bernoulli rewards (0/1: ties) or Gaussian ones."""
    replicas, n_arms, budget = size
    means = np.linspace(0.2, 0.8, n_arms).tolist()
    source = Bernoulli({"means": means}) if bernoulli else Gaussian({"means": means, "variances": 0.05})
    ids = np.arange(replicas)
    source.reset(ids, 0)
    objective = Objective.TOP_M if top_m > 1 else Objective.BEST_ARM
    problem = Problem(objective=objective, budget=budget, n_arms=n_arms, top_m=top_m, truth=source.truth,
                      source=source.name, reward_range=source.reward_range)
    return Simulation(policy_factory=lambda: cls(params), sources=[source], problems=[problem],
                      allocator=Single(), feedback=feedback, seed=3, replicas=ids, checkpoints=[budget])


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


# enough replicas and arms that only some replicas' m-th or (m+1)-th largest mean moves per step
WIDE = (80, 30, 900)


def kept_indices(policy):
    """The policy's KeptIndex objects that keep gaps (built by now)."""
    found = [getattr(policy, name, None) for name in ("_kept", "_posterior")]
    return [kept for kept in found if isinstance(kept, KeptIndex) and kept._style is not None]


def recomputed(kept, stats):
    """``kept.current(stats)`` recomputed from scratch (on a copy: ``kept`` is left alone)."""
    fresh = copy.copy(kept)
    fresh._stamp = kept._stamp.copy()
    fresh.terms = np.empty(0)
    return fresh.current(stats)


CASES = [  # (policy, parameters, m, Bernoulli rewards)
    *[(cls, params, m, bernoulli) for cls, params, m in [
        (GapE, {"a": 4.0, "b": 1.0}, 1),
        (GapEV, {"a": 2.0, "b": 1.0}, 2),
        (AGapEV, {}, 1),
        (AGapEV, {"gaps": "gape"}, 3),
    ] for bernoulli in (False, True)],
    # the greedy-confidence-pursuit paper's rules (rewards in [0, 1]): pending pulls ignored, so partial updates under delays too
    (AGapEVTopM, {"warmup_per_arm": 2}, 3, True),
    (PACTopM, {"warmup_per_arm": 2}, 2, True),  # posterior means kept, no derived values
]
DELAYED = FeedbackConfig(delay=2, delay_model="uniform", delay_max=3)


@pytest.mark.parametrize("feedback", [FeedbackConfig(), DELAYED], ids=["immediate", "delayed"])
@pytest.mark.parametrize(("cls", "params", "top_m", "bernoulli"), CASES)
def test_partial_updates_equal_a_recomputation(cls, params, top_m, feedback, bernoulli, monkeypatch):
    partial = []  # per call of _refresh: only some replicas
    refresh = KeptIndex._refresh

    def spy(self, rows=None):
        partial.append(rows is not None)
        return refresh(self, rows)

    monkeypatch.setattr(KeptIndex, "_refresh", spy)
    sim = simulation(cls, params, top_m, feedback, WIDE, bernoulli)
    policy, stats = sim.policies[0], sim.stats[0]
    checked = 0
    while not sim.finished:
        sim.step()
        for kept in kept_indices(policy):
            if not kept.terms.size:
                continue
            expected = recomputed(kept, stats)
            for name, got, want in zip(("terms", "gaps", "derived"), kept.current(stats), expected, strict=True):
                np.testing.assert_array_equal(got, want, err_msg=f"{name} at step {sim.step_index}")
            checked += 1
    assert checked > 100
    if feedback == FeedbackConfig():  # with delays, widths counting pending pulls are recomputed
        assert any(partial), "no step refreshed only some replicas: the partial path went untested"
