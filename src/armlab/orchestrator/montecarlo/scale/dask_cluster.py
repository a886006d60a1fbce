"""Run the tasks of a Monte Carlo run on a Dask cluster: the way past one machine.

Without a scheduler address a local cluster is started for the run: ``workers - 1``
processes (one thread each, at least one), and this process works beside them, so that
``workers`` processes work as with local workers (on one machine, more would contend for
its cores); with an address, this process connects to that scheduler and gives up after
``connect_timeout`` seconds with a message that says so.  Tasks travel as plan recipes
(:mod:`armlab.orchestrator.montecarlo.scale.portable`), so every Dask worker needs armlab and the plugins
the experiment uses installed.  A task's reports are recorded where it runs and handed to
the collector when it completes, and so are its log events (never printed on the worker's
stdout): progress advances task by task, and the numbers are those of a run in one process.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from armlab.errors import ConfigError
from armlab.extras import require
from armlab.orchestrator.montecarlo.scale.collect import Collector, Message, Relay, replay_log, worker_logs
from armlab.orchestrator.montecarlo.scale.heap import apply_heap_setting
from armlab.orchestrator.montecarlo.scale.portable import PlanRecipe, rebuild, recipe
from armlab.orchestrator.montecarlo.scale.task_costs import Schedule
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, run_task
from armlab.plan import ExperimentPlan

if TYPE_CHECKING:
    from armlab.orchestrator.montecarlo.scale.dask_forked import ForkedWorkers

__all__ = ["DaskCluster"]

#: The module a local cluster's workers import as they start (while this process works), so
#: their first task does not pay for importing armlab.
PRELOAD = __name__

#: Dask settings of the local cluster armlab starts (never of a cluster at a user's
#: scheduler), measured on a 2-core machine where the cluster's start-up competes with this
#: process's tasks for the CPU: nannies (where the workers were not forked from this process
#: already, :mod:`armlab.orchestrator.montecarlo.scale.dask_forked`) fork the workers from a
#: server that has imported Dask and armlab once
#: (:mod:`armlab.orchestrator.montecarlo.scale.fork_server`) instead of each starting an
#: interpreter that imports them; no statistical profiler (a thread sampling every task's stack every 10 ms),
#: no GIL monitor, no spilling or pausing on memory (a run holds a few task outputs), and a
#: slower memory monitor and event-loop tick for a cluster that lives seconds.
LOCAL_CLUSTER_SETTINGS = {
    "distributed.worker.multiprocessing-method": "forkserver",
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.tick.interval": "1s",
}


class DaskCluster:
    """A connection to a Dask cluster (started here when ``scheduler`` is None) for one run.

    A local cluster takes a while to start (its scheduler, and worker processes: ``forked``
    ones, :mod:`~armlab.orchestrator.montecarlo.scale.dask_forked`, wait for it ready;
    otherwise its nannies start processes that import armlab, :data:`PRELOAD`).  Meanwhile this process is not idle: the cluster starts in a
    background thread while this process runs tasks itself, the costliest first, as a worker
    would, and it goes on beside the cluster once it is up (``this_process_works=False``:
    the cluster runs every task, on ``workers`` processes).  With a scheduler address the
    cluster runs every task.  The cluster holds one task per worker thread at a time, the
    costliest left, and gets the next as one completes: Dask would otherwise assign every
    task to a worker as it is submitted, and a worker done early could not take the
    costliest task queued on another.
    """

    def __init__(self, workers: int, scheduler: str | None, connect_timeout: float,
                 this_process_works: bool = True, forked: ForkedWorkers | None = None) -> None:
        self._workers = workers
        self._forked = forked
        self._scheduler = scheduler
        self._connect_timeout = connect_timeout
        self._here = this_process_works and scheduler is None
        self._client: Any = None
        self._cluster: Any = None
        self._starting: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._lock = threading.Lock()
        self._up = threading.Event()
        self._handout: _Handout | None = None

    def __enter__(self) -> DaskCluster:
        if self._scheduler is None and importlib.util.find_spec("distributed") is not None:
            # importing distributed takes a while too: the background thread does it
            self._starting = threading.Thread(target=self._start_local, name="armlab-dask-cluster-start", daemon=True)
            self._starting.start()
            return self
        distributed = require("distributed", "dask", "executor 'dask'")
        try:
            self._client = distributed.Client(self._scheduler, timeout=self._connect_timeout)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot reach the Dask scheduler at {self._scheduler!r} within {self._connect_timeout:g} s ({exc}): "
                "check --scheduler (the address a running `dask scheduler` prints, e.g. tcp://host:8786), "
                "or leave it out to start a local cluster"
            ) from None
        self._up.set()
        return self

    def _start_local(self) -> None:
        """(The background thread) start the local cluster; once up, hand it its first tasks.

        Dask logs only its errors (a loaded machine makes it warn of slow ticks, scratch
        folders and shutdowns, which would interleave with armlab's own log lines)."""
        try:
            if self._forked is not None:
                import dask

                with dask.config.set(LOCAL_CLUSTER_SETTINGS):
                    self._cluster = self._forked.cluster(LOCAL_CLUSTER_SETTINGS)
            else:
                self._cluster = _nanny_cluster(self._threads)
            import distributed

            client = distributed.Client(self._cluster)
            with self._lock:
                self._client = client
                if self._handout is not None:
                    self._handout.send(client, self._threads)
        except BaseException as exc:  # raised in the calling thread, by run
            self._failure = exc
        finally:
            self._up.set()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._starting is not None:
            self._starting.join()
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    @property
    def width(self) -> int:
        """How many tasks run at once: a local cluster's worker threads and this process
        (``workers``), or the worker threads at the scheduler's address (at least 1)."""
        if self._scheduler is None:
            return max(1, self._workers)
        return self._threads

    @property
    def _threads(self) -> int:
        """The cluster's worker threads: one per local worker process, or all at the scheduler."""
        if self._scheduler is None:
            return max(1, self._workers - 1) if self._here else max(1, self._workers)
        return max(1, sum(self._client.nthreads().values()))

    def run(
        self,
        plans: Sequence[ExperimentPlan],
        tasks: Sequence[Task],
        collector: Collector,
        finished: Callable[[Task, TaskOutput], Any],
        schedule: Schedule = list,
    ) -> None:
        """Run every task, handing each output to ``finished`` as it completes (and letting
        the cluster forget it).  The cluster gets the tasks in the order ``schedule(tasks)``
        gives, one per free worker thread; beside a local cluster this process takes the
        next one each time it is free (as the class says), and in between its own steps it
        takes in what the cluster completed, so progress and saved tasks keep coming."""
        handout = _Handout([recipe(plan) for plan in plans], schedule(tasks))
        with self._lock:
            self._handout = handout
            if self._client is not None:
                handout.send(self._client, self._threads)
        collected = 0

        def collect(future: Any) -> None:
            nonlocal collected
            output, messages, logs = future.result()
            task = handout.sent.pop(future)
            future.release()
            for message in messages:
                collector.receive(message)
            for method, event in logs:
                replay_log(method, event)
            collected += 1
            finished(task, output)

        def send(message: Message) -> None:  # this process's reports, and meanwhile the cluster's outputs
            collector.receive(message)
            while not handout.completed.empty():
                collect(handout.completed.get())

        done = 0
        try:
            while self._here and self._failure is None and (mine := handout.take()):
                (task,) = mine
                finished(task, run_task(plans[task.run], task, Relay(send, task)))
                done += 1
            self._up.wait()
            if self._failure is not None:
                raise self._failure
            while collected < handout.total - done:  # the cluster's, as they complete
                collect(handout.completed.get())
        finally:
            handout.stop()


def _nanny_cluster(workers: int) -> Any:
    """A local cluster of ``workers`` processes started by Dask's nannies, forked from a
    server that imported armlab and Dask (without :class:`ForkedWorkers`: this process ran
    threads before the run, or is not on Linux)."""
    # first: the server imports armlab and Dask while this thread imports Dask (here, not at the
    # top: importing fork_server builds the plugin registry, which only a local cluster needs now)
    from armlab.orchestrator.montecarlo.scale.fork_server import start_fork_server

    start_fork_server()
    import dask
    import distributed

    with dask.config.set(LOCAL_CLUSTER_SETTINGS):
        return distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
            preload=[PRELOAD], silence_logs=logging.ERROR)


class _Handout:
    """The scheduled tasks of a run not yet given out, first in the schedule first, to this
    process or to the cluster (:attr:`sent`: the task of each future on the cluster).

    A future that completes gets its worker thread the next task at once (from Dask's
    callback thread) and joins :attr:`completed`, where this process collects it when free:
    a worker done while this process still runs a task of its own does not wait for it."""

    def __init__(self, recipes: list[PlanRecipe], ordered: list[Task]) -> None:
        self._recipes = recipes
        self._left = collections.deque(ordered)
        self._lock = threading.Lock()
        self.total = len(ordered)
        self.sent: dict[Any, Task] = {}
        self.completed: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def take(self, count: int = 1) -> list[Task]:
        """The first ``count`` tasks left in the schedule (fewer if fewer are left), now given out."""
        with self._lock:
            return [self._left.popleft() for _ in range(min(count, len(self._left)))]

    def stop(self) -> None:
        """Give out nothing more (the run is over, or failed)."""
        self.take(len(self._left))

    def send(self, client: Any, count: int) -> list[Any]:
        """Submit to the cluster the first ``count`` tasks left; their futures."""
        batch = self.take(count)
        futures = [client.submit(_run_recorded, self._recipes[task.run], task, pure=False) for task in batch]
        self.sent.update(zip(futures, batch, strict=True))
        for future in futures:
            future.add_done_callback(functools.partial(self._completed, client))
        return futures

    def _completed(self, client: Any, future: Any) -> None:
        self.send(client, 1)  # the freed thread's next task
        self.completed.put(future)


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
