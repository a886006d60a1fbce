"""The engine with several bandits: shared budget, joint allocation, delays, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.simulate import prepare_sources
from armlab.plan import build_plan
from armlab.plugins.gcp.allocators import GCPBayes
from armlab.plugins.gcp.joint_ucb import GabUCB
from armlab.plugins.interfaces import Policy

ALLOCATORS = [
    {"plugin": "gcp-bayes", "warmup_per_arm": 2},
    {"plugin": "gcp-targeted", "warmup_per_arm": 2, "max_resamples": 4},
    {"plugin": "map-ucb", "warmup_per_arm": 2},
    {"plugin": "map-ucb", "warmup_per_arm": 2, "arm_rule": "agapev-joint", "bandit_epsilon": 0.5},
    {"plugin": "uniform-bandit"},
    {"plugin": "uniform-bandit", "order": "random", "arm_rule": "agapev-joint", "warmup_per_arm": 2},
    {"plugin": "gab-ucb", "warmup_per_arm": 2},
]
FEEDBACK = [
    {},  # immediate
    {"delay": 7, "in_flight": 3},  # several trials in flight, possibly on different bandits
    {"delay_model": "batch", "delay": 10},  # the greedy-confidence-pursuit paper's batched feedback
]


def run(config, registry, replicas=None, policy=0):
    """Run one policy of ``config`` to the end; return the simulation."""
    plan = build_plan(config, registry)
    replicas = np.arange(config.replicas) if replicas is None else np.asarray(replicas)
    sources = prepare_sources(plan, replicas, config.seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    spec = plan.policies[policy]
    sim = Simulation(policy_factory=spec.create, sources=sources, problems=problems,
                     allocator=plan.create_allocator(spec), feedback=config.feedback, seed=config.seed,
                     replicas=replicas, checkpoints=config.checkpoint_list())
    while not sim.finished:
        sim.step()
    return sim


def with_targets(config_bandits):
    return [{**entry, "target_arm": 0} for entry in config_bandits]


CASES = [(allocator, {}) for allocator in ALLOCATORS] + [
    (allocator, feedback) for allocator in (ALLOCATORS[0], ALLOCATORS[-1]) for feedback in FEEDBACK[1:]
]


@pytest.mark.parametrize(("allocator", "feedback"), CASES,
                         ids=lambda v: "-".join(str(x) for x in v.values()) or "immediate")
@pytest.mark.slow
def test_budget_is_shared_and_conserved(multi_config, registry, allocator, feedback):
    base = multi_config()
    config = multi_config(
        feedback=feedback,
        bandits=with_targets(base.model_dump(mode="json")["bandits"]),
        policies=[{"plugin": "bayes-topm", "warmup_per_arm": 2, "allocator": allocator}],
    )
    sim = run(config, registry)
    budget = config.problem.budget
    per_bandit = np.stack([st.dispatched for st in sim.stats], axis=1)
    assert (sim.dispatched == budget).all() and (per_bandit.sum(axis=1) == budget).all()
    assert all((st.counts.sum(axis=1) == st.dispatched).all() for st in sim.stats)  # every result arrived
    assert all(st.pending.sum() == 0 for st in sim.stats)
    assert (per_bandit >= 1).all()  # the warm-up (or the cycle) reached every bandit


def test_same_seed_same_run_and_replicas_are_independent(multi_config, registry):
    config = multi_config(feedback={"delay": 3, "in_flight": 2})
    first, again = run(config, registry), run(config, registry)
    alone = run(config, registry, replicas=[4])
    for a, b, c in zip(first.stats, again.stats, alone.stats, strict=True):
        assert np.array_equal(a.counts, b.counts) and np.array_equal(a.means, b.means)
        assert np.array_equal(a.counts[4:5], c.counts) and np.array_equal(a.means[4:5], c.means)


def test_bandit_instances_are_common_to_methods_and_distinct_per_bandit(multi_config, registry):
    config = multi_config(policies=[
        {"plugin": "bayes-topm", "warmup_per_arm": 2, "allocator": {"plugin": "gcp-bayes"}},
        {"plugin": "bayes-topm", "label": "u", "allocator": {"plugin": "uniform-bandit"}},
    ])
    plan = build_plan(config, registry)
    sources = prepare_sources(plan, np.arange(4), config.seed)
    twice = prepare_sources(plan, np.arange(4), config.seed)
    hard1, hard2 = sources[1].truth.means, sources[2].truth.means  # one entry, count = 2
    assert not np.array_equal(hard1, hard2)
    assert all(np.array_equal(s.truth.means, t.truth.means) for s, t in zip(sources, twice, strict=True))


class Refusing(Policy):
    """Answers like any policy but must never be asked for an arm."""

    name = "refusing"

    def select(self, stats):
        raise AssertionError("a joint allocator chose the arms; the policy must not be asked")


def test_joint_allocator_chooses_arms_and_policies_only_answer(multi_config, registry):
    config = multi_config(policies=[{"plugin": "bayes-topm", "allocator": {"plugin": "gab-ucb", "warmup_per_arm": 1}}])
    plan = build_plan(config, registry)
    replicas = np.arange(3)
    sources = prepare_sources(plan, replicas, config.seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    sim = Simulation(policy_factory=Refusing, sources=sources, problems=problems,
                     allocator=GabUCB({"warmup_per_arm": 1}), feedback=config.feedback, seed=config.seed,
                     replicas=replicas, checkpoints=[150, 300])
    while not sim.finished:
        sim.step()
    assert (sim.dispatched == 300).all()
    assert sim.cp_error.shape == (3, 2)  # the policies still recommend at checkpoints


class CheckedGCPBayes(GCPBayes):
    """GCP-Bayes that asserts it never pursues a bandit already at the confidence target."""

    name = "checked-gcp-bayes"

    def select(self, stats):
        chosen = super().select(stats)
        rows = np.flatnonzero(self.warmup.done)  # past the warm-up
        confident = self.tracker.refresh(stats)[rows] >= self.params.confidence_target
        some_open = ~confident.all(axis=1)
        picked_confident = confident[np.arange(rows.size), chosen[rows]]
        assert not (picked_confident & some_open).any()
        self.checked += int(some_open.sum())
        return chosen


def test_gcp_bayes_never_pursues_a_confident_bandit_along_a_run(multi_config, registry):
    config = multi_config(bandits=[
        {"label": "easy", "count": 2, "source": {"plugin": "gap-bernoulli", "n_arms": 3, "gap": 0.4}},
        {"label": "hard", "source": {"plugin": "gap-bernoulli", "n_arms": 3, "gap": 0.02}},
    ])
    plan = build_plan(config, registry)
    replicas = np.arange(config.replicas)
    sources = prepare_sources(plan, replicas, config.seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    allocator = CheckedGCPBayes({"warmup_per_arm": 2, "confidence_target": 0.9})
    allocator.checked = 0
    sim = Simulation(policy_factory=plan.policies[0].create, sources=sources, problems=problems,
                     allocator=allocator, feedback=config.feedback, seed=config.seed, replicas=replicas,
                     checkpoints=[config.problem.budget])
    confident_seen = False
    while not sim.finished:
        sim.step()
        confident_seen |= bool((allocator.tracker.rho >= 0.9).any())
    assert allocator.checked > 0 and confident_seen  # the filter was exercised
