"""Estimate what each task of a Monte Carlo run will cost, so the costliest start first.

Workers claim tasks in the order the scheduler gives.  When the costliest task (Thompson
sampling's, say, several times an index policy's) is claimed last, one worker runs it alone
at the end while the others idle; handing tasks out in decreasing cost (longest processing
time first) leaves short tasks for the end, which fill the gaps.

:func:`probed_costs`, the default :data:`CostModel`, measures each policy once: a short
probe times :data:`PROBE_STEPS` steps of its simulation on the first run that has it, after
a first step per arm (:data:`MAX_WARMUP_STEPS` at most, where every policy acts alike), at two
widths (:data:`PROBE_WIDTHS` replicas, fewer when the run has fewer), in this thread's CPU
time, so the machine's load does not reorder the tasks.  A step costs a fixed part (the
engine's numpy calls, whatever the replicas) plus a part per replica
(:class:`StepCost`); the two widths separate them, so the estimate holds at a task's own
width, where the fixed part of a cheap index policy no longer dominates as it does on a
few replicas.  A task's estimate is its trials times that cost per trial at its width,
scaled by its run's arms, so one probe per policy serves every value of a sweep over the
budget, K or the replicas.  The probe draws its own sources and discards them: nothing it
does reaches a task's numbers.  Any function with the same signature can replace it
(``ShardRunner(cost_model=...)``).

:func:`order_by_cost` keeps a run's tasks together (runs in decreasing total cost, each
run's tasks in decreasing cost), so a run's results are complete, and can be reduced to its
summary, soon after its first task starts: with hundreds of sweep values, this process holds
the arrays of a few runs at a time, not of all of them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from armlab.orchestrator.montecarlo.probe import seconds_per_trial
from armlab.orchestrator.montecarlo.scale.tasks import Task
from armlab.plan import ExperimentPlan, PolicySpec

__all__ = ["CostModel", "Schedule", "StepCost", "fill_the_start", "order_by_cost",
           "probed_costs", "scheduler"]

#: ``model(plans, tasks) -> costs``: an estimate (any unit) of each of ``tasks``, in order.
CostModel = Callable[[Sequence[ExperimentPlan], Sequence[Task]], list[float]]

#: ``schedule(tasks) -> tasks``: the order in which to hand the tasks out.
Schedule = Callable[[Sequence[Task]], list[Task]]

#: Steps a probe runs: enough to pass the first pull of every arm of a small problem and
#: time some steps of the policy's own rule.
PROBE_STEPS = 48

#: The most tasks :func:`fill_the_start` moves to the front.
MAX_MOVED = 3

#: Steps a probe runs before it times any: one per arm (where every policy pulls each arm
#: once, alike), at most this many.
MAX_WARMUP_STEPS = 128

#: The widths (replicas) a probe runs at (fewer when the run has fewer).
PROBE_WIDTHS = (16, 64)


@dataclass(frozen=True)
class StepCost:
    """CPU seconds per trial of a policy on ``replicas`` replicas: ``fixed / replicas +
    per_replica`` (``fixed``: the part of a step that costs the same whatever the replicas,
    per trial of one replica; ``per_replica``: the rest), for a run of ``arms`` arms."""

    fixed: float
    per_replica: float
    arms: int

    def per_trial(self, replicas: int, arms: int) -> float:
        """Seconds per trial at ``replicas`` replicas, in a run of ``arms`` arms."""
        return (self.fixed / replicas + self.per_replica) * arms / self.arms


def probed_costs(plans: Sequence[ExperimentPlan], tasks: Sequence[Task]) -> list[float]:
    """Seconds each task should take, from one probe of each policy (as the module says)."""
    costs: dict[str, StepCost] = {}
    for task in tasks:
        plan = plans[task.run]
        spec = plan.policies[task.policy]
        if spec.label not in costs:
            costs[spec.label] = probe_step_cost(plan, spec)
    return [costs[plans[t.run].policies[t.policy].label].per_trial(t.stop - t.start, _arms(plans[t.run]))
            * _trials(plans[t.run], t) for t in tasks]


def probe_step_cost(plan: ExperimentPlan, spec: PolicySpec) -> StepCost:
    """The :class:`StepCost` of policy ``spec`` in ``plan``, from its first steps at each of
    :data:`PROBE_WIDTHS` (one width when the run has no more replicas than the narrowest)."""
    narrow, wide = (min(plan.config.replicas, width) for width in PROBE_WIDTHS)
    warmup = min(_arms(plan), MAX_WARMUP_STEPS)
    seconds = {width: seconds_per_trial(plan, spec, replicas=width, steps=PROBE_STEPS, clock=time.thread_time,
                                        warmup=warmup)
               for width in {narrow, wide}}
    if narrow == wide:
        return StepCost(0.0, seconds[wide], _arms(plan))
    # seconds per trial = fixed / width + per_replica at both widths; timing noise must not make either negative
    fixed = min(max(0.0, (seconds[narrow] - seconds[wide]) / (1 / narrow - 1 / wide)), seconds[wide] * wide)
    return StepCost(fixed, seconds[wide] - fixed / wide, _arms(plan))


def scheduler(plans: Sequence[ExperimentPlan], model: CostModel = probed_costs, workers: int = 1,
              start_seconds: float = 0.0) -> Schedule:
    """The schedule of tasks of ``plans``: :func:`order_by_cost` with ``model``'s estimates,
    then :func:`fill_the_start` for ``workers`` processes of which all but this one start
    ``start_seconds`` late."""

    def schedule(tasks: Sequence[Task]) -> list[Task]:
        cost = dict(zip(tasks, model(plans, tasks), strict=True))
        return fill_the_start(order_by_cost(tasks, list(cost.values())), cost, workers, start_seconds)

    return schedule


def fill_the_start(ordered: list[Task], cost: Mapping[Task, float], workers: int, start_seconds: float) -> list[Task]:
    """``ordered``, or it with a few of its cheapest tasks moved to the front (cheapest first)
    when that ends sooner, as each process claims the next task when free: this process at
    once, the others ``start_seconds`` later.

    With few tasks the costliest-first order is not the best one when the workers start
    late: this process runs the costliest task while a worker starts, and the two cannot
    share the rest evenly (six tasks, one twice as long as the others: a few per cent later
    than the best).  A cheap task here first, the costliest to the first worker, fills the
    start-up instead.  Only tasks of the last run move (the others stay together); the
    first of the shortest finishes wins, so costliest first unless moving pays."""
    movable = 0 if workers < 2 or not ordered else min(MAX_MOVED, sum(t.run == ordered[-1].run for t in ordered))
    candidates = [ordered[len(ordered) - moved:][::-1] + ordered[:len(ordered) - moved] for moved in range(movable + 1)]
    return min(candidates, key=lambda order: _finish(order, cost, workers, start_seconds))


def _finish(order: Sequence[Task], cost: Mapping[Task, float], workers: int, start_seconds: float) -> float:
    """When the last of ``order`` ends if each process claims the next task as soon as it is free."""
    free = [0.0] + [start_seconds] * (workers - 1)
    for task in order:
        first = min(range(workers), key=free.__getitem__)  # ties: this process
        free[first] += cost[task]
    return max(free)


def order_by_cost(tasks: Sequence[Task], costs: Sequence[float]) -> list[Task]:
    """``tasks`` grouped by run, runs in decreasing total cost, each run's tasks in decreasing
    cost (stable: the given order among equals)."""
    cost = dict(zip(tasks, costs, strict=True))
    totals: defaultdict[int, float] = defaultdict(float)
    for task in tasks:
        totals[task.run] += cost[task]
    return sorted(tasks, key=lambda t: (-totals[t.run], t.run, -cost[t]))


def _arms(plan: ExperimentPlan) -> int:
    return max(1, sum(plan.arm_counts))


def _trials(plan: ExperimentPlan, task: Task) -> int:
    return (task.stop - task.start) * plan.config.problem.budget
