"""Scale-out: run a Monte Carlo run's tasks here, on worker processes or on Dask, and merge.

:class:`ShardRunner` splits the runs into tasks (:mod:`armlab.orchestrator.montecarlo.scale.tasks`: by
policy and sweep value first, blocks of replicas only when that leaves workers idle), runs
them in this process and worker processes (:mod:`armlab.orchestrator.montecarlo.scale.processes`) or on a
Dask cluster (:mod:`armlab.orchestrator.montecarlo.scale.dask_cluster`), feeds their reports to a
:class:`~armlab.orchestrator.montecarlo.scale.collect.Collector` (progress and log lines while it runs) and
merges their outputs.  The summary is bit-identical for any split, worker count or executor,
and when part of the tasks come from an interrupted run (:mod:`armlab.orchestrator.montecarlo.scale.saved_tasks`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from armlab.errors import ConfigError
from armlab.events import Listener
from armlab.log import get_logger
from armlab.orchestrator.montecarlo.scale.collect import Collector
from armlab.orchestrator.montecarlo.scale.dask_cluster import DaskCluster
from armlab.orchestrator.montecarlo.scale import processes
from armlab.orchestrator.montecarlo.scale.processes import Crew, run_locally, start_delay
from armlab.orchestrator.montecarlo.scale.run_outputs import RunOutputs
from armlab.orchestrator.montecarlo.scale.saved_tasks import SavedTasks
from armlab.orchestrator.montecarlo.simulate import PolicyResult, ProgressCallback
from armlab.orchestrator.montecarlo.scale.task_costs import CostModel, probed_costs, scheduler
from armlab.orchestrator.montecarlo.scale.tasks import Task, plan_tasks, remaining
from armlab.plan import ExperimentPlan

if TYPE_CHECKING:
    from armlab.orchestrator.montecarlo.scale.dask_forked import ForkedWorkers

__all__ = ["ShardRunner"]

EXECUTORS = ("local", "dask")

log = get_logger("armlab.orchestrator")

Reduced = TypeVar("Reduced")


def _keep(run: int, results: list[PolicyResult]) -> list[PolicyResult]:
    """The default reduction: a run's per-policy results as they are."""
    return results


@dataclass
class ShardRunner:
    """Where the tasks of simulated runs go.

    ``executor="local"``: this process and ``workers - 1`` worker processes (``workers=1``:
    this process alone).  ``executor="dask"``: a cluster at ``scheduler`` (an address,
    reached within ``connect_timeout`` seconds), or a local one of ``workers`` processes.
    ``shard_size`` splits every run's replicas into blocks of that many (by default only
    when there are fewer tasks than workers).  ``cost_model`` estimates each task's cost,
    and the costliest are handed out first (:mod:`armlab.orchestrator.montecarlo.scale.task_costs`).
    """

    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    shard_size: int | None = None
    connect_timeout: float = 5.0
    cost_model: CostModel = probed_costs

    _crew: Crew | None = field(default=None, init=False, repr=False, compare=False)
    _forked: ForkedWorkers | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.executor!r}; use 'local' or 'dask'")
        if self.scheduler is not None and self.executor != "dask":
            raise ConfigError(
                f"a scheduler address ({self.scheduler!r}) is for the Dask executor: add --executor dask, "
                "or drop --scheduler to run on local worker processes"
            )

    @contextmanager
    def warm(self) -> Iterator[None]:
        """Start the worker processes now, before the caller prepares the run
        (:func:`~armlab.orchestrator.runner.run_experiment` reads and checks the config
        meanwhile): forked before this process starts any thread, or spawned ones importing
        armlab meanwhile (:mod:`~armlab.orchestrator.montecarlo.scale.processes`); :meth:`run`
        takes them, and those it did not take are stopped on leaving.  For a local Dask
        cluster, its worker processes are forked now where local workers would be
        (:mod:`~armlab.orchestrator.montecarlo.scale.dask_forked`); its scheduler starts in
        :meth:`run`, alongside this process's work."""
        if self.workers > 1 and self._crew is None and self._forked is None:
            if self.executor == "local":
                self._crew = Crew(self.workers - 1)
            elif self.scheduler is None:
                self._forked = _forked_dask_workers(self.workers - 1)
        try:
            yield
        finally:
            crew, self._crew = self._crew, None
            forked, self._forked = self._forked, None
            if crew is not None:
                crew.stop()
            if forked is not None:
                forked.stop()

    def run(
        self,
        plans: Sequence[ExperimentPlan],
        progress: ProgressCallback | None = None,
        listeners: Sequence[Listener] = (),
        saved: SavedTasks | None = None,
        reduce: Callable[[int, list[PolicyResult]], Reduced] = _keep,  # type: ignore[assignment]
    ) -> list[Reduced]:
        """Per plan (sweep values fan out together), what ``reduce(run, results)`` makes of
        its per-policy results (by default: those results); ``progress`` and ``listeners``
        as in :func:`~armlab.orchestrator.runner.run_experiment`.  A run's results are
        reduced as soon as all its tasks are in, and dropped (:mod:`armlab.orchestrator.montecarlo.scale.run_outputs`).
        With ``saved``, the tasks found there are not run again and each new one is saved as
        it finishes."""
        outputs = RunOutputs(plans, reduce, saved)
        done = [] if saved is None else [task for task, _ in saved.each(plans)]
        if done:
            log.info("tasks_resumed", tasks=len(done), folder=str(saved.folder))

        def start(width: int) -> tuple[list[Task], Collector]:
            tasks = remaining(plans, plan_tasks(plans, width, self.shard_size), done)
            collector = Collector(plans, [*done, *tasks], progress, listeners)
            if saved is not None:  # read again, one at a time: a resumed sweep is not held whole either
                for task, output in saved.each(plans):
                    collector.restore(task, output)
                    outputs.add(task, output, save=False)
            return tasks, collector

        if self.executor == "dask":
            forked, self._forked = self._forked, None
            with DaskCluster(self.workers, self.scheduler, self.connect_timeout, forked=forked) as cluster:
                tasks, collector = start(cluster.width)
                cluster.run(plans, tasks, collector, outputs.add, scheduler(plans, self.cost_model))
        else:
            tasks, collector = start(self.workers)
            crew, self._crew = self._crew, None
            delay = start_delay(crew.method if crew is not None else processes.start_method())
            schedule = scheduler(plans, self.cost_model, self.workers, delay)
            run_locally(plans, tasks, collector, self.workers, outputs.add, schedule, crew)
        return outputs.results()


def _forked_dask_workers(count: int) -> ForkedWorkers | None:
    """``count`` forked Dask worker processes, or None where they would not be safe (this
    process runs threads, or is not on Linux: the cluster's nannies start its workers) or
    Dask is not installed (the run says so)."""
    if processes.start_method() != "fork" or importlib.util.find_spec("distributed") is None:
        return None
    from armlab.orchestrator.montecarlo.scale.dask_forked import ForkedWorkers  # imports Dask: starts no thread

    return ForkedWorkers(count) if processes.start_method() == "fork" else None
