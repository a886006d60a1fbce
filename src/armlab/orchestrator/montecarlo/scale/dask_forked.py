"""The worker processes of a local Dask cluster, forked before this process starts any thread.

A local cluster's worker would otherwise come from Dask's nanny: an interpreter (or a child
of a fork server, :mod:`armlab.orchestrator.montecarlo.scale.fork_server`) that imports Dask,
numpy and armlab before it can take a task, about 1 s of CPU that on a 2-core machine is taken
from the run.  Where local workers fork (Linux, no other thread yet:
:func:`~armlab.orchestrator.montecarlo.scale.processes.start_method`),
:meth:`~armlab.orchestrator.montecarlo.scale.shards.ShardRunner.warm` forks them instead,
with Dask already imported (about 0.2 s, which starts no thread), before the config is even
read.  Each waits for the address of the scheduler this process starts for the run, then
runs one Dask worker with one thread there, under the settings of the local cluster
(:data:`~armlab.orchestrator.montecarlo.scale.dask_cluster.LOCAL_CLUSTER_SETTINGS`).  The
cluster is Dask's own ``SpecCluster``: each worker is a :class:`_Forked` process, started by
sending it the address and closed by closing its pipe, which also ends it if this process
dies first.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import dask
import distributed
from distributed.deploy.spec import ProcessInterface

from armlab.orchestrator.montecarlo.scale.processes import forget_parent_signals
from armlab.plugins.registry import default_registry

__all__ = ["ForkedWorkers"]

#: Seconds a closed worker gets to end by itself before it is killed.
CLOSE_SECONDS = 5.0


class ForkedWorkers:
    """``count`` processes forked now, each waiting to be one worker of a local Dask cluster
    (:meth:`cluster`); :meth:`stop` ends those still running.  Fork only from a process that
    runs no other thread."""

    def __init__(self, count: int) -> None:
        default_registry()  # built here once (this process needs it too): the workers inherit it
        context = multiprocessing.get_context("fork")
        self._waiting: list[tuple[BaseProcess, Connection]] = []
        try:
            for number in range(1, count + 1):
                address_out, address_in = context.Pipe(duplex=False)
                process = context.Process(target=_serve, args=(address_out, address_in),
                                          name=f"armlab-dask-worker-{number}", daemon=True)
                process.start()
                address_out.close()
                self._waiting.append((process, address_in))
        except BaseException:
            self.stop()
            raise

    def cluster(self, settings: dict[str, Any]) -> Any:
        """A Dask cluster of a scheduler in this process (on loopback, no dashboard) and these
        processes as its workers, each sent ``settings`` with the scheduler's address."""
        workers = {number: {"cls": _Forked, "options": {"process": process, "address_in": address_in,
                                                        "settings": settings}}
                   for number, (process, address_in) in enumerate(self._waiting)}
        scheduler = {"cls": distributed.Scheduler,
                     "options": {"host": "127.0.0.1", "dashboard": False, "dashboard_address": None}}
        return distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR,
                                       name="armlab-local")

    def stop(self) -> None:
        """End every process (closing its pipe ends it) and wait for it."""
        for process, address_in in self._waiting:
            _end(process, address_in)


class _Forked(ProcessInterface):
    """One of the forked processes, as a worker of Dask's ``SpecCluster``."""

    def __init__(self, scheduler: str, name: Any, process: BaseProcess, address_in: Connection,
                 settings: dict[str, Any]) -> None:
        super().__init__(scheduler, name)
        self._scheduler, self._name = scheduler, name
        self._process, self._address_in, self._settings = process, address_in, settings

    async def start(self) -> None:
        self._address_in.send((self._scheduler, self._name, self._settings))
        await super().start()

    async def close(self) -> None:
        await asyncio.to_thread(_end, self._process, self._address_in)
        await super().close()


def _end(process: BaseProcess, address_in: Connection) -> None:
    """Close ``process``'s pipe (it ends when it sees that), and kill it if it has not ended
    within :data:`CLOSE_SECONDS`."""
    address_in.close()
    process.join(CLOSE_SECONDS)
    if process.exitcode is None:
        process.kill()
        process.join()


def _serve(address_out: Connection, address_in: Connection) -> None:
    """A forked process: wait for the scheduler's address, then be a Dask worker until the pipe
    closes (this process closed the worker, or died)."""
    address_in.close()  # this process's end: only this process may close it
    forget_parent_signals()
    try:
        scheduler, name, settings = address_out.recv()
    except EOFError:  # stopped before a cluster needed it
        return
    threading.Thread(target=_exit_when_closed, args=(address_out,), name="armlab-parent-watch", daemon=True).start()
    dask.config.set(settings)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    asyncio.run(_work(scheduler, name))


def _exit_when_closed(address_out: Connection) -> None:
    """End this worker process as soon as its pipe closes."""
    try:
        address_out.recv()
    except EOFError:
        pass
    os._exit(0)


async def _work(scheduler: str, name: Any) -> None:
    async with distributed.Worker(scheduler, name=name, nthreads=1, host="127.0.0.1") as worker:
        await worker.finished()
