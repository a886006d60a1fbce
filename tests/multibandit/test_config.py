"""Multi-bandit experiment files: [[bandits]], per-policy allocators, and the plan built from them."""

from __future__ import annotations

import pytest

from armlab.config import BANDITS_SOURCE, ExperimentConfig, validate_config
from armlab.errors import ConfigError
from armlab.multibandit import BanditProblem
from armlab.plan import build_plan
from armlab.problem import Objective


def test_bandit_entries_expand_with_labels_objectives_and_m(multi_config):
    config = multi_config(bandits=[
        {"label": "easy", "source": {"plugin": "gap-bernoulli", "gap": 0.3}},
        {"label": "hard", "count": 2, "source": {"plugin": "gap-bernoulli", "gap": 0.02}},
        {"objective": "top-m", "m": 2, "source": {"plugin": "gap-bernoulli", "n_arms": 5, "gap": 0.1}},
    ])
    bandits = config.bandit_list()
    assert [b.label for b in bandits] == ["easy", "hard1", "hard2", "bandit3"]
    assert [b.objective for b in bandits] == [Objective.BEST_ARM] * 3 + [Objective.TOP_M]
    assert [b.m for b in bandits] == [None, None, None, 2]
    assert config.source.plugin == BANDITS_SOURCE


def test_one_source_experiment_is_a_single_bandit(make_config):
    (only,) = make_config().bandit_list()
    assert only.label == "bandit0" and only.source.plugin == "gaussian"


def test_source_and_bandits_exclude_each_other(multi_config):
    with pytest.raises(ConfigError, match=r"either \[source\] .* or \[\[bandits\]\]"):
        multi_config(source={"plugin": "gaussian", "means": [0.1, 0.2]})


def test_placeholder_source_round_trips_through_dumps(multi_config):
    config = multi_config()
    assert config.with_overrides(replicas=3).replicas == 3
    again = ExperimentConfig.model_validate_json(config.model_dump_json())
    assert again == config


@pytest.mark.parametrize(("bandit", "message"), [
    ({"objective": "regret"}, "'best-arm' or 'top-m'"),
    ({"objective": "top-m"}, "needs m"),
    ({"objective": "top-m", "m": 2, "target_arm": 0}, "target_arm needs the best-arm objective"),
])
def test_bandit_entry_mistakes_are_named(multi_config, bandit, message):
    entry = {"source": {"plugin": "gap-bernoulli", "gap": 0.1}, **bandit}
    with pytest.raises(ConfigError, match=message):
        multi_config(bandits=[entry, entry])


def test_source_sweeps_are_refused_with_bandits(multi_config):
    with pytest.raises(ConfigError, match="sweep a problem"):
        multi_config(sweep={"parameter": "source.n_arms", "values": [3, 4]})


def test_policy_entry_allocator_overrides_and_default_label(multi_config, registry):
    config = multi_config(
        allocator={"plugin": "uniform-bandit"},
        policies=[
            {"plugin": "bayes-topm", "warmup_per_arm": 2},
            {"plugin": "bayes-topm", "warmup_per_arm": 2, "allocator": {"plugin": "map-ucb", "bandit_epsilon": 0.5}},
        ],
    )
    plan = build_plan(config, registry)
    first, second = plan.policies
    assert (first.label, second.label) == ("bayes-topm", "map-ucb/bayes-topm")
    assert plan.create_allocator(first).name == "uniform-bandit"
    override = plan.create_allocator(second)
    assert override.name == "map-ucb" and override.params.bandit_epsilon == 0.5
    assert second.params.model_dump() == first.params.model_dump()  # the allocator is not a policy parameter


def test_plan_describes_every_bandit(multi_config, registry):
    plan = build_plan(multi_config(bandits=[
        {"label": "a", "target_arm": 1, "source": {"plugin": "gap-bernoulli", "n_arms": 4, "gap": 0.1}},
        {"label": "b", "objective": "top-m", "m": 2, "source": {"plugin": "gap-bernoulli", "n_arms": 6, "gap": 0.1}},
    ]), registry)
    assert plan.multi_bandit and [b.label for b in plan.bandits] == ["a", "b"]
    source = plan.create_source(1)
    problem = plan.problem(source, None, 1)
    assert isinstance(problem, BanditProblem)
    assert (problem.n_arms, problem.top_m, problem.objective) == (6, 2, Objective.TOP_M)
    assert plan.problem(plan.create_source(0), None, 0).target_arm == 1


@pytest.mark.parametrize(("updates", "message"), [
    ({"policies": [{"plugin": "bayes-topm"}]}, r"allocator: allocator 'single' serves exactly one bandit"),
    ({"bandits": [{"target_arm": 7, "source": {"plugin": "gap-bernoulli", "n_arms": 4, "gap": 0.1}}] * 2},
     r"target_arm = 7 is not an arm"),
    ({"bandits": [{"objective": "top-m", "m": 4, "source": {"plugin": "gap-bernoulli", "n_arms": 4, "gap": 0.1}}] * 2},
     r"m = 4 must be smaller than the number of arms \(4\)"),
    ({"policies": [{"plugin": "bayes-topm", "allocator": {"plugin": "gcp-targeted"}}]}, r"no bandit has one"),
    ({"policies": [{"plugin": "bayes-topm", "allocator": {"plugin": "gcp-bayes", "warmup": 3}}]},
     r"policies\[0\]\.allocator\.warmup: unknown field"),
    ({"policies": [{"plugin": "bayes-topm", "allocator": {"plugin": "gab-ucb"}}],
      "problem": {"objective": "best-arm", "budget": 20}},
     r"needs a budget n above 30"),
])
def test_plan_errors_name_the_field_and_fix(multi_config, registry, updates, message):
    with pytest.raises(ConfigError, match=message):
        build_plan(multi_config(**updates), registry)


def test_gcp_allocators_refuse_unbounded_rewards(registry):
    config = validate_config({
        "problem": {"objective": "best-arm", "budget": 500},
        "bandits": [{"source": {"plugin": "gaussian", "means": [0.5, 0.4]}, "count": 2}],
        "policies": [{"plugin": "uniform", "allocator": {"plugin": "gcp-bayes"}}],
    })
    with pytest.raises(ConfigError, match=r"needs rewards in \[0, 1\]"):
        build_plan(config, registry)
