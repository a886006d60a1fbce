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

from collections.abc import Sequence
from dataclasses import dataclass

from armlab.errors import ConfigError
from armlab.events import Listener
from armlab.log import get_logger
from armlab.orchestrator.montecarlo.scale.collect import Collector
from armlab.orchestrator.montecarlo.scale.dask_cluster import DaskCluster
from armlab.orchestrator.montecarlo.scale.processes import run_locally
from armlab.orchestrator.montecarlo.scale.saved_tasks import SavedTasks
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, merge_results, plan_tasks, remaining
from armlab.orchestrator.montecarlo.simulate import PolicyResult, ProgressCallback
from armlab.plan import ExperimentPlan

__all__ = ["ShardRunner"]

EXECUTORS = ("local", "dask")

log = get_logger("armlab.orchestrator")


@dataclass
class ShardRunner:
    """Where the tasks of simulated runs go.

    ``executor="local"``: this process and ``workers - 1`` worker processes (``workers=1``:
    this process alone).  ``executor="dask"``: a cluster at ``scheduler`` (an address,
    reached within ``connect_timeout`` seconds), or a local one of ``workers`` processes.
    ``shard_size`` splits every run's replicas into blocks of that many (by default only
    when there are fewer tasks than workers).
    """

    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    shard_size: int | None = None
    connect_timeout: float = 5.0

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.executor!r}; use 'local' or 'dask'")
        if self.scheduler is not None and self.executor != "dask":
            raise ConfigError(
                f"a scheduler address ({self.scheduler!r}) is for the Dask executor: add --executor dask, "
                "or drop --scheduler to run on local worker processes"
            )

    def run(
        self,
        plans: Sequence[ExperimentPlan],
        progress: ProgressCallback | None = None,
        listeners: Sequence[Listener] = (),
        saved: SavedTasks | None = None,
    ) -> list[list[PolicyResult]]:
        """Per plan (sweep values fan out together), per policy results; ``progress`` and
        ``listeners`` as in :func:`~armlab.orchestrator.runner.run_experiment`.  With
        ``saved``, the tasks found there are not run again and each new one is saved as
        it finishes."""
        outputs: dict[Task, TaskOutput] = {}
        if saved is not None:
            outputs = saved.load(plans)
            if outputs:
                log.info("tasks_resumed", tasks=len(outputs), folder=str(saved.folder))

        def finished(task: Task, output: TaskOutput) -> None:
            outputs[task] = output
            if saved is not None:
                saved.save(task, output)

        def start(width: int) -> tuple[list[Task], Collector]:
            tasks = remaining(plans, plan_tasks(plans, width, self.shard_size), list(outputs))
            collector = Collector(plans, [*outputs, *tasks], progress, listeners)
            for task, output in outputs.items():
                collector.restore(task, output)
            return tasks, collector

        if self.executor == "dask":
            with DaskCluster(self.workers, self.scheduler, self.connect_timeout) as cluster:
                tasks, collector = start(cluster.width)
                cluster.run(plans, tasks, collector, finished)
        else:
            tasks, collector = start(self.workers)
            run_locally(plans, tasks, collector, self.workers, finished)
        return [merge_results(plan, run, outputs) for run, plan in enumerate(plans)]
