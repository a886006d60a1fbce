"""Run the tasks of a Monte Carlo run on a Dask cluster: the way past one machine.

Without a scheduler address a local cluster of ``workers`` processes (one thread each) is
started for the run; with one, this process connects to that scheduler and gives up after
``connect_timeout`` seconds with a message that says so.  Tasks travel as plan recipes
(:mod:`armlab.orchestrator.montecarlo.scale.portable`), so every Dask worker needs armlab and the plugins
the experiment uses installed.  A task's reports are recorded where it runs and handed to
the collector when it completes, and so are its log events (never printed on the worker's
stdout): progress advances task by task, and the numbers are those of a run in one process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from armlab.errors import ConfigError
from armlab.extras import require
from armlab.orchestrator.montecarlo.scale.collect import Collector, Message, Relay, replay_log, worker_logs
from armlab.orchestrator.montecarlo.scale.heap import apply_heap_setting
from armlab.orchestrator.montecarlo.scale.portable import PlanRecipe, rebuild, recipe
from armlab.orchestrator.montecarlo.scale.task_costs import Schedule
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, run_task
from armlab.plan import ExperimentPlan

__all__ = ["DaskCluster"]


class DaskCluster:
    """A connection to a Dask cluster (started here when ``scheduler`` is None) for one run."""

    def __init__(self, workers: int, scheduler: str | None, connect_timeout: float) -> None:
        self._workers = workers
        self._scheduler = scheduler
        self._connect_timeout = connect_timeout
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> DaskCluster:
        distributed = require("distributed", "dask", "executor 'dask'")
        Client, LocalCluster = distributed.Client, distributed.LocalCluster  # noqa: N806 - classes
        if self._scheduler is None:
            self._cluster = LocalCluster(n_workers=self._workers, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
            self._client = Client(self._cluster)
            return self
        try:
            self._client = Client(self._scheduler, timeout=self._connect_timeout)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot reach the Dask scheduler at {self._scheduler!r} within {self._connect_timeout:g} s ({exc}): "
                "check --scheduler (the address a running `dask scheduler` prints, e.g. tcp://host:8786), "
                "or leave it out to start a local cluster"
            ) from None
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    @property
    def width(self) -> int:
        """How many tasks the cluster runs at once (its worker threads; at least 1)."""
        return max(1, sum(self._client.nthreads().values()))

    def run(
        self,
        plans: Sequence[ExperimentPlan],
        tasks: Sequence[Task],
        collector: Collector,
        finished: Callable[[Task, TaskOutput], Any],
        schedule: Schedule = list,
    ) -> None:
        """Run every task on the cluster, handing each output to ``finished`` as it completes
        (and letting the cluster forget it).  The scheduler hands them to free workers in
        the order ``schedule(tasks)`` gives (a task's Dask priority is its rank from the end)."""
        from distributed import as_completed

        recipes = [recipe(plan) for plan in plans]
        ordered = schedule(tasks)
        futures = {self._client.submit(_run_recorded, recipes[t.run], t, pure=False, priority=len(ordered) - rank): t
                   for rank, t in enumerate(ordered)}
        for future in as_completed(futures):
            output, messages, logs = future.result()
            task = futures.pop(future)
            future.release()
            for message in messages:
                collector.receive(message)
            for method, event in logs:
                replay_log(method, event)
            finished(task, output)


def _run_recorded(
    plan_recipe: PlanRecipe, task: Task
) -> tuple[TaskOutput, list[Message], list[tuple[str, dict[str, Any]]]]:
    """A Dask worker's part: run ``task`` and keep its reports for the collector and its log
    events for this process's log (never the worker's stdout).  The worker's heap gets the
    headroom armlab's own processes reserve (:mod:`armlab.orchestrator.montecarlo.scale.heap`)."""
    _reserve_heap_once()
    messages: list[Message] = []
    logs: list[tuple[str, dict[str, Any]]] = []
    with worker_logs(lambda method, event: logs.append((method, event))):
        output = run_task(rebuild(plan_recipe), task, Relay(messages.append, task))
    return output, messages, logs


@functools.cache
def _reserve_heap_once() -> bool:
    """:func:`~armlab.orchestrator.montecarlo.scale.heap.apply_heap_setting`, once per Dask worker process."""
    return apply_heap_setting()
