"""Split a Monte Carlo run into tasks that keep the engine's vectors wide, and merge them back.

A task is one policy of one run (a ``[sweep]`` value) on a block of consecutive replicas.
The engine's cost per step is a fixed part (a few numpy calls whatever the number of
replicas) plus a part proportional to the replicas, so halving a block does not halve its
time.  Work is therefore split by policy and sweep value first, every task holding all
replicas; replicas are split only when that gives fewer tasks than workers, and then into
blocks of at least :data:`MIN_BLOCK` replicas (or of ``block_size`` when the user asks).

Every number a replica produces is a pure function of the seed and its global replica id,
and each policy of a run sees the same sources, so a task computes exactly what the same
policy and replicas compute inside one big batch.  :func:`merge_results` concatenates the
per-replica arrays in replica order and the aggregates are computed once from them: the
summary is bit-identical for any split, worker count or executor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from armlab.errors import ConfigError
from armlab.orchestrator.montecarlo.simulate import BlockReporter, PolicyResult, make_observers, simulate
from armlab.plan import ExperimentPlan

__all__ = ["MIN_BLOCK", "Task", "TaskOutput", "merge_results", "plan_tasks", "remaining", "run_task", "split_replicas"]

#: The narrowest block of replicas the automatic split makes (narrower blocks spend most of
#: their time in the engine's fixed per-step cost).
MIN_BLOCK = 100


@dataclass(frozen=True)
class Task:
    """Policy number ``policy`` of run number ``run``, on replicas ``[start, stop)``."""

    run: int
    policy: int
    start: int
    stop: int


@dataclass(frozen=True)
class TaskOutput:
    """What a task sends back: its per-replica arrays and totals (no plugin classes, so it
    pickles wherever the task ran)."""

    cp_error: np.ndarray
    cp_regret: np.ndarray
    stopped_at: np.ndarray
    extra: dict[str, Any]
    trials: int
    wall_seconds: float


def split_replicas(replicas: int, size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` blocks of at most ``size`` consecutive replica ids."""
    return [(start, min(start + size, replicas)) for start in range(0, replicas, size)]


def has_step_metrics(plan: ExperimentPlan) -> bool:
    """True when step observers add metrics to the summary (``[metrics]``, multi-bandit
    completions): those are computed over a whole run and cannot be merged across blocks."""
    return bool(make_observers(plan))


def plan_tasks(plans: Sequence[ExperimentPlan], workers: int, block_size: int | None = None) -> list[Task]:
    """The tasks of ``plans`` (the runs) for ``workers`` workers, largest first.

    Without ``block_size`` a run's replicas are split only when the runs' policies are
    fewer than ``workers``; a run with step-observer metrics is never split, and asking
    for ``block_size`` on such a run is refused.
    """
    units = sum(len(plan.policies) for plan in plans)
    tasks = []
    for run, plan in enumerate(plans):
        replicas = plan.config.replicas
        size = block_size or _automatic_block(replicas, workers, units)
        blocks = split_replicas(replicas, size)
        if len(blocks) > 1 and has_step_metrics(plan):
            if block_size is not None:
                raise ConfigError(
                    f"run {run} of experiment {plan.config.name!r} has step-observer metrics ([metrics], or "
                    "bandit completions of a multi-bandit run), which cannot be merged across blocks of "
                    "replicas: drop --shard-size (the work is then split by policy and sweep value) "
                    "or run with --workers 1"
                )
            blocks = [(0, replicas)]
        tasks += [Task(run, policy, start, stop) for policy in range(len(plan.policies)) for start, stop in blocks]
    return _largest_first(plans, tasks)


def _largest_first(plans: Sequence[ExperimentPlan], tasks: Sequence[Task]) -> list[Task]:
    """Largest first, so the last tasks to start are short ones (stable: config order among equals)."""
    return sorted(tasks, key=lambda t: -(t.stop - t.start) * plans[t.run].config.problem.budget)


def remaining(plans: Sequence[ExperimentPlan], tasks: Sequence[Task], done: Sequence[Task]) -> list[Task]:
    """``tasks`` less the replicas that the ``done`` tasks (saved by an interrupted run, maybe
    split otherwise) already hold: the blocks in between, largest first."""
    left = []
    for task in tasks:
        start = task.start
        for first, stop in sorted((d.start, d.stop) for d in done if (d.run, d.policy) == (task.run, task.policy)):
            if first > start and first < task.stop:
                left.append(Task(task.run, task.policy, start, first))
            start = max(start, stop)
        if start < task.stop:
            left.append(Task(task.run, task.policy, start, task.stop))
    return _largest_first(plans, left)


def _automatic_block(replicas: int, workers: int, units: int) -> int:
    if units >= workers:
        return replicas
    return max(MIN_BLOCK, math.ceil(replicas / math.ceil(workers / units)))


def run_task(plan: ExperimentPlan, task: Task, report: BlockReporter) -> TaskOutput:
    """Run ``task`` of ``plan`` in this process."""
    (result,) = simulate(
        plan,
        seed=plan.config.seed,
        replicas=np.arange(task.start, task.stop),
        report=report,
        policies=[plan.policies[task.policy]],
    )
    return TaskOutput(result.cp_error, result.cp_regret, result.stopped_at, result.extra, result.trials,
                      result.wall_seconds)


def merge_results(
    plan: ExperimentPlan, run: int, outputs: Mapping[Task, TaskOutput], policies: Sequence[int] | None = None
) -> list[PolicyResult]:
    """One result per policy of ``plan`` (run number ``run``; only the policy numbers
    ``policies`` if given): its tasks' arrays in replica order."""
    merged = []
    for index, spec in enumerate(plan.policies):
        if policies is not None and index not in policies:
            continue
        tasks = sorted((t for t in outputs if t.run == run and t.policy == index), key=lambda t: t.start)
        parts = [outputs[t] for t in tasks]
        merged.append(
            PolicyResult(
                label=spec.label,
                spec=spec,
                replicas=np.concatenate([np.arange(t.start, t.stop) for t in tasks]),
                cp_error=np.concatenate([p.cp_error for p in parts]),
                cp_regret=np.concatenate([p.cp_regret for p in parts]),
                stopped_at=np.concatenate([p.stopped_at for p in parts]),
                extra=parts[0].extra,  # the allocator entry, the same in every block (runs with step metrics are whole)
                trials=sum(p.trials for p in parts),
                wall_seconds=sum(p.wall_seconds for p in parts),
            )
        )
    return merged
