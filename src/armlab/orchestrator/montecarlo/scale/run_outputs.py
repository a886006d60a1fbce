"""Hold the outputs of a run's tasks only until the run is complete, then reduce them.

A sweep of hundreds of values has thousands of tasks, each with per-replica arrays.  This
process keeps a task's output only while its run (one sweep value) still misses some
replicas of some policy; once every replica of every policy is in, the run's outputs are
merged (:func:`~armlab.orchestrator.montecarlo.scale.tasks.merge_results`), handed to ``reduce`` (the runner
makes the run's summary of them) and dropped.  With saved tasks
(:class:`~armlab.orchestrator.montecarlo.scale.saved_tasks.SavedTasks`) an output is written to
``DIR/tasks/`` as it arrives and not kept at all: the run's files are read back when it
completes.  The tasks are handed out run by run (:func:`~armlab.orchestrator.montecarlo.scale.task_costs.order_by_cost`),
so only the runs in progress are ever held.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from armlab.orchestrator.montecarlo.scale.saved_tasks import SavedTasks
from armlab.orchestrator.montecarlo.simulate import PolicyResult
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, merge_results
from armlab.plan import ExperimentPlan

__all__ = ["RunOutputs"]

Reduced = TypeVar("Reduced")


class RunOutputs(Generic[Reduced]):
    """The outputs of the tasks of ``plans`` (the runs), reduced run by run as the module says."""

    def __init__(
        self,
        plans: Sequence[ExperimentPlan],
        reduce: Callable[[int, list[PolicyResult]], Reduced],
        saved: SavedTasks | None = None,
    ) -> None:
        self._plans = plans
        self._reduce = reduce
        self._saved = saved
        self._replicas_done: Counter[int] = Counter()
        self._held: defaultdict[int, dict[Task, TaskOutput | None]] = defaultdict(dict)  # None: on disk
        self._reduced: dict[int, Reduced] = {}

    @property
    def held_runs(self) -> int:
        """How many runs have task outputs held (in memory or on disk) waiting for the rest."""
        return len(self._held)

    def add(self, task: Task, output: TaskOutput, *, save: bool = True) -> None:
        """``task`` finished with ``output`` (saved first, unless it was loaded from there)."""
        if self._saved is not None:
            if save:
                self._saved.save(task, output)
            self._held[task.run][task] = None
        else:
            self._held[task.run][task] = output
        self._replicas_done[task.run] += task.stop - task.start
        plan = self._plans[task.run]
        if self._replicas_done[task.run] == plan.config.replicas * len(plan.policies):
            self._reduced[task.run] = self._reduce(task.run, merge_results(plan, task.run, self._take(task.run)))

    def _take(self, run: int) -> dict[Task, TaskOutput]:
        """The outputs of ``run``'s tasks (read back from disk where saved), no longer held."""
        outputs = {}
        for task, output in self._held.pop(run).items():
            if output is None:
                assert self._saved is not None
                output = self._saved.read(task)
            outputs[task] = output
        return outputs

    def results(self) -> list[Reduced]:
        """What ``reduce`` gave for each run, in run order (every run must be complete)."""
        missing = [run for run in range(len(self._plans)) if run not in self._reduced]
        assert not missing, f"runs {missing} are not complete"
        return [self._reduced[run] for run in range(len(self._plans))]
