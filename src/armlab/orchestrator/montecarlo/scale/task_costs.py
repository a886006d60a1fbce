"""Estimate what each task of a Monte Carlo run will cost, so the costliest start first.

Workers claim tasks in the order the scheduler gives.  When the costliest task (Thompson
sampling's, say, several times an index policy's) is claimed last, one worker runs it alone
at the end while the others idle; handing tasks out in decreasing cost (longest processing
time first) leaves short tasks for the end, which fill the gaps.

:func:`probed_costs`, the default :data:`CostModel`, measures each policy once: a short
probe steps its simulation :data:`PROBE_STEPS` steps on at most :data:`PROBE_REPLICAS`
replicas of the first run that has it, and gives the seconds per trial, replica and arm.  A
task's estimate is that times its trials (budget x replicas) and its run's arms, so one
probe per policy serves every value of a sweep over the budget or K.  The probe draws its
own sources and discards them: nothing it does reaches a task's numbers.  Any function with
the same signature can replace it (``ShardRunner(cost_model=...)``).

:func:`order_by_cost` keeps a run's tasks together (runs in decreasing total cost, each
run's tasks in decreasing cost), so a run's results are complete, and can be reduced to its
summary, soon after its first task starts: with hundreds of sweep values, this process holds
the arrays of a few runs at a time, not of all of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from armlab.orchestrator.montecarlo.probe import seconds_per_trial
from armlab.orchestrator.montecarlo.scale.tasks import Task
from armlab.plan import ExperimentPlan, PolicySpec

__all__ = ["CostModel", "Schedule", "order_by_cost", "probed_costs", "scheduler"]

#: ``model(plans, tasks) -> costs``: an estimate (any unit) of each of ``tasks``, in order.
CostModel = Callable[[Sequence[ExperimentPlan], Sequence[Task]], list[float]]

#: ``schedule(tasks) -> tasks``: the order in which to hand the tasks out.
Schedule = Callable[[Sequence[Task]], list[Task]]

#: Steps a probe runs: enough to pass the first pull of every arm of a small problem and
#: time some steps of the policy's own rule.
PROBE_STEPS = 48

#: Replicas a probe runs on (fewer when the run has fewer).
PROBE_REPLICAS = 64


def probed_costs(plans: Sequence[ExperimentPlan], tasks: Sequence[Task]) -> list[float]:
    """Seconds each task should take, from one probe of each policy (as the module says)."""
    per_unit: dict[str, float] = {}
    for task in tasks:
        plan = plans[task.run]
        spec = plan.policies[task.policy]
        if spec.label not in per_unit:
            per_unit[spec.label] = probe_seconds_per_trial(plan, spec) / _arms(plan)
    return [per_unit[plans[t.run].policies[t.policy].label] * _trials(plans[t.run], t) * _arms(plans[t.run])
            for t in tasks]


def probe_seconds_per_trial(plan: ExperimentPlan, spec: PolicySpec) -> float:
    """Seconds policy ``spec`` of ``plan`` spends per trial and replica over its first steps."""
    return seconds_per_trial(plan, spec, replicas=PROBE_REPLICAS, steps=PROBE_STEPS)


def scheduler(plans: Sequence[ExperimentPlan], model: CostModel = probed_costs) -> Schedule:
    """The schedule of tasks of ``plans``: :func:`order_by_cost` with ``model``'s estimates."""
    return lambda tasks: order_by_cost(tasks, model(plans, tasks))


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
