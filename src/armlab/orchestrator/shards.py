"""Scale-out: run a Monte Carlo run's tasks here, on worker processes or on Dask, and merge.

:class:`ShardRunner` splits the runs into tasks (:mod:`armlab.orchestrator.tasks`: by
policy and sweep value first, blocks of replicas only when that leaves workers idle), runs
them in this process and worker processes (:mod:`armlab.orchestrator.processes`) or on a
Dask cluster (:mod:`armlab.orchestrator.dask_cluster`), feeds their reports to a
:class:`~armlab.orchestrator.collect.Collector` (progress and log lines while it runs) and
merges their outputs.  The summary is bit-identical for any split, worker count or executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from armlab.errors import ConfigError
from armlab.events import Listener
from armlab.orchestrator.collect import Collector
from armlab.orchestrator.dask_cluster import DaskCluster
from armlab.orchestrator.processes import run_locally
from armlab.orchestrator.simulate import PolicyResult, ProgressCallback
from armlab.orchestrator.tasks import merge_results, plan_tasks
from armlab.plan import ExperimentPlan

__all__ = ["ShardRunner"]

EXECUTORS = ("local", "dask")


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
    ) -> list[list[PolicyResult]]:
        """Per plan (sweep values fan out together), per policy results; ``progress`` and
        ``listeners`` as in :func:`~armlab.orchestrator.runner.run_experiment`."""
        if self.executor == "dask":
            with DaskCluster(self.workers, self.scheduler, self.connect_timeout) as cluster:
                tasks = plan_tasks(plans, cluster.width, self.shard_size)
                outputs = cluster.run(plans, tasks, Collector(plans, tasks, progress, listeners))
        else:
            tasks = plan_tasks(plans, self.workers, self.shard_size)
            outputs = run_locally(plans, tasks, Collector(plans, tasks, progress, listeners), self.workers)
        return [merge_results(plan, run, outputs) for run, plan in enumerate(plans)]
