"""Tasks keep the vector wide (policy and sweep value first), and the collector's lines do
not depend on how the replicas were split."""

from __future__ import annotations

import numpy as np
import pytest
import structlog

from armlab.config import validate_config
from armlab.errors import ConfigError
from armlab.events import CheckpointReached, PolicyFinished
from armlab.orchestrator.montecarlo.metrics import mean_and_stderr
from armlab.orchestrator.montecarlo.scale.collect import Collector
from armlab.orchestrator.montecarlo.scale.tasks import Task, plan_tasks, split_replicas
from armlab.plan import build_plan

EXPERIMENT = {
    "name": "tasks", "seed": 2, "replicas": 250, "checkpoints": [50, 100],
    "problem": {"objective": "best-arm", "budget": 100},
    "source": {"plugin": "gaussian", "means": [0.5, 0.4, 0.3], "variances": 0.5},
    "policies": [{"plugin": "ucb1"}, {"plugin": "uniform"}],
}


def plans_of(registry, **updates):
    config = validate_config({**EXPERIMENT, **updates})
    return [build_plan(variant, registry) for _, variant in config.variants()]


def blocks(tasks, policy=0):
    return [(t.start, t.stop) for t in tasks if t.policy == policy]


def test_split_replicas_covers_every_replica_once():
    assert split_replicas(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert split_replicas(3, 5) == [(0, 3)]


def test_policies_are_split_before_replicas(registry):
    plans = plans_of(registry)
    assert plan_tasks(plans, workers=2) == [Task(0, 0, 0, 250), Task(0, 1, 0, 250)]
    assert blocks(plan_tasks(plans, workers=4)) == [(0, 125), (125, 250)]
    assert blocks(plan_tasks(plans, workers=8)) == [(0, 100), (100, 200), (200, 250)]  # never below MIN_BLOCK


def test_sweep_values_are_split_before_replicas_and_the_largest_tasks_go_first(registry):
    plans = plans_of(registry, checkpoints=None, sweep={"parameter": "problem.budget", "values": [60, 120]})
    tasks = plan_tasks(plans, workers=4)
    assert [(t.run, t.policy, t.start, t.stop) for t in tasks] == [(1, 0, 0, 250), (1, 1, 0, 250),
                                                                   (0, 0, 0, 250), (0, 1, 0, 250)]


def test_an_explicit_block_size_splits_every_run(registry):
    assert blocks(plan_tasks(plans_of(registry), workers=1, block_size=100)) == [(0, 100), (100, 200), (200, 250)]


def test_runs_with_step_metrics_are_never_split(registry):
    plans = plans_of(registry, metrics={"confidence": True})
    assert blocks(plan_tasks(plans, workers=8)) == [(0, 250)]
    with pytest.raises(ConfigError, match=r"cannot be merged across blocks.*drop --shard-size"):
        plan_tasks(plans, workers=2, block_size=100)


def test_checkpoint_lines_and_progress_do_not_depend_on_the_split(registry):
    plans = plans_of(registry)
    values = np.random.default_rng(0).random(250)
    (mean,), (stderr,) = mean_and_stderr(values[:, None])
    calls = []
    tasks = plan_tasks(plans, workers=1, block_size=100)
    heard = []
    collector = Collector(plans, tasks, lambda *call: calls.append(call), listeners=[heard.append])
    with structlog.testing.capture_logs() as logs:
        for start, stop in reversed(split_replicas(250, 100)):  # blocks report in any order
            relay = collector.relay(Task(0, 0, start, stop))
            relay.progress("ucb1", 10)
            relay.checkpoint("ucb1", 0, 50, values[start:stop])
            relay.finished("ucb1", (stop - start) * 100, 0.5)
    lines = [line for line in logs if line["event"] in ("checkpoint", "policy_finished")]
    assert heard == [
        CheckpointReached(trials=50, policy="ucb1", metric="error_rate", value=mean, stderr=stderr, budget=100),
        PolicyFinished(policy="ucb1", trials=100, wall_seconds=1.5, budget=100),  # per replica
    ]
    assert lines == [{**event.to_dict(), "log_level": "info"} for event in heard]  # the same, logged
    # trials over all blocks; a finished block counts in full
    assert calls[:3] == [("ucb1", 10, 25000), ("ucb1", 5000, 25000), ("ucb1", 5010, 25000)]
    assert calls[-1] == ("ucb1", 25000, 25000)
