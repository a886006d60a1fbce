"""Run the tasks of a Monte Carlo run in this process and in worker processes.

With ``workers = N``, this process starts ``N - 1`` worker processes (a :class:`Crew`,
before the config is even read when :func:`~armlab.orchestrator.runner.run_experiment`
runs it) and works too.  This process puts the tasks in the order to hand them out
(``schedule``: costliest first, from a short probe of each policy, or a cheap one first for
this process to run while spawned workers start,
:mod:`armlab.orchestrator.montecarlo.scale.task_costs`) and starts on the first one; each
process then claims the next unclaimed task in that order (a shared counter) until none is
left, so a short task never waits behind a long one and the long ones do not end the run
alone.

How workers start (:func:`start_method`): on Linux, from a process that runs no other
thread (the usual case: :meth:`~armlab.orchestrator.montecarlo.scale.shards.ShardRunner.warm`
starts them before anything else), they are forked: a copy of this process, with numpy,
armlab and the plugin registry loaded, ready to claim a task at once (a spawned worker
imports them first: about 0.6 s of CPU, which on a 2-core machine is taken from the work).
Forking a process that runs threads is unsafe (a lock another thread holds stays held in
the copy; Python 3.12 warns), and macOS and Windows do not fork safely, so there, and
whenever another thread runs (a notebook, an event loop's worker threads), workers are
spawned: a fresh interpreter.  A forked worker drops this process's SIGTERM handler and
event-loop wake-up pipe, so that :meth:`Crew.stop` ends it and its signals reach no loop here.
Either way workers rebuild the plans from their recipes
(:mod:`armlab.orchestrator.montecarlo.scale.portable`), reserve heap headroom as armlab's
own processes do (:func:`~armlab.orchestrator.montecarlo.scale.heap.apply_heap_setting`),
and send through one queue their tasks' reports
(:class:`~armlab.orchestrator.montecarlo.scale.collect.Relay`), their log events and each
task's output; this process takes them in between its own steps, so progress and
checkpoint lines appear while the run goes on.  A script that runs experiments with workers
must start them under ``if __name__ == "__main__":``, as a spawned worker imports the
script again.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.process import BaseProcess
from typing import Any

from armlab.orchestrator.montecarlo.scale.collect import Collector, Message, Relay, replay_log, worker_logs
from armlab.orchestrator.montecarlo.scale.heap import apply_heap_setting
from armlab.orchestrator.montecarlo.scale.portable import PlanRecipe, rebuild, recipe
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, run_task
from armlab.orchestrator.montecarlo.scale.task_costs import Schedule
from armlab.plan import ExperimentPlan
from armlab.plugins.registry import default_registry

__all__ = ["WORKER_START_SECONDS", "Crew", "forget_parent_signals", "run_locally", "start_delay", "start_method"]

#: Seconds a spawned worker process takes before it claims its first task (a fresh interpreter
#: importing numpy and armlab: 0.5-0.7 s measured on a 2-core machine).
WORKER_START_SECONDS = 0.7

#: Seconds between checks that the workers are alive while this process waits for them.
POLL_SECONDS = 0.2


class WorkerTraceback(Exception):
    """Where a task failed in a worker process (the cause of the error raised here)."""


class Crew:
    """``count`` worker processes, started now and waiting for one run's tasks (:meth:`hand`).

    Starting them before the run is planned (:meth:`~armlab.orchestrator.montecarlo.scale.shards.ShardRunner.warm`)
    forks them before this process starts any thread, or lets spawned ones import armlab
    while this process reads and checks the config; :attr:`method` says which.
    """

    def __init__(self, count: int) -> None:
        self.method = start_method()
        if self.method == "fork":
            default_registry()  # built here once (this process needs it too): a forked worker inherits it
        context = multiprocessing.get_context(self.method)
        self.claims = context.Value("q", 0)  # the position in the order of the next task to claim
        self.outbox = context.Queue()
        self._jobs = context.Queue()
        self.processes: list[BaseProcess] = []
        try:
            for number in range(1, count + 1):
                process = context.Process(target=_work, args=(self._jobs, self.claims, self.outbox),
                                          name=f"armlab-worker-{number}", daemon=True)
                process.start()
                self.processes.append(process)
        except BaseException:
            self.stop()
            raise

    def hand(self, recipes: list[PlanRecipe], tasks: list[Task], order: list[int]) -> None:
        """Give every worker the run: its plans' recipes, its tasks and the order to claim them in."""
        for _ in self.processes:
            self._jobs.put((recipes, tasks, order))

    def stop(self) -> None:
        """End the workers now, whatever they are doing."""
        for process in self.processes:
            process.terminate()
        self.join()

    def join(self) -> None:
        """Wait for every worker to end."""
        for process in self.processes:
            process.join()


def start_method() -> str:
    """``fork`` on Linux from a process that runs no other thread, else ``spawn`` (see the module)."""
    return "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"


def start_delay(method: str) -> float:
    """Seconds a worker started with ``method`` takes before it can claim a task, counted from
    when this process claims its first: a forked worker is waiting already, a spawned one
    still imports numpy and armlab."""
    return 0.0 if method == "fork" else WORKER_START_SECONDS


def run_locally(
    plans: Sequence[ExperimentPlan],
    tasks: Sequence[Task],
    collector: Collector,
    workers: int,
    finished: Callable[[Task, TaskOutput], Any],
    schedule: Schedule = list,
    crew: Crew | None = None,
) -> None:
    """Run every task in this process and ``workers - 1`` worker processes (``crew``, if
    started already), handing each output to ``finished`` as it arrives (so an interruption
    keeps what was done); the workers claim them in the order ``schedule(tasks)`` gives (this
    process alone: as given).

    Workers ignore SIGINT: Ctrl-C reaches the whole process group, and this process alone
    decides, stopping the workers.
    """
    helpers = min(workers, len(tasks)) - 1
    if helpers <= 0:
        if crew is not None:
            crew.stop()
        for task in tasks:
            finished(task, run_task(plans[task.run], task, collector.relay(task)))
        return
    try:
        recipes = [recipe(plan) for plan in plans]
        crew = crew or Crew(helpers)
        inbox = _Inbox(crew.outbox, collector, crew.processes, lambda index, output: finished(tasks[index], output))

        def send(message: Message) -> None:  # this process's reports, and meanwhile the workers'
            collector.receive(message)
            inbox.drain()

        number_of = {task: index for index, task in enumerate(tasks)}
        order = [number_of[task] for task in schedule(tasks)]
        crew.hand(recipes, list(tasks), order)
        for index in _claimed(crew.claims, order):
            task = tasks[index]
            inbox.take_output(index, run_task(plans[task.run], task, Relay(send, task)))
            inbox.drain()
        while inbox.count < len(tasks):
            inbox.wait()
    except BaseException:
        if crew is not None:
            crew.stop()
        raise
    crew.join()


def _claimed(claims: Any, order: Sequence[int]) -> Iterator[int]:
    """Task numbers claimed one at a time, in ``order``, from the shared counter until none is left."""
    while True:
        with claims.get_lock():
            position = claims.value
            claims.value = position + 1
        if position >= len(order):
            return
        yield order[position]


def _work(jobs: Any, claims: Any, outbox: Any) -> None:
    """A worker process: once handed a run (from ``jobs``), claim and run its tasks in the
    order given, sending everything to ``outbox``."""
    forget_parent_signals()
    apply_heap_setting()
    recipes, tasks, order = jobs.get()
    with worker_logs(lambda method, event: outbox.put(("log", method, event))):
        for index in _claimed(claims, order):
            task = tasks[index]
            try:
                report = Relay(lambda message: outbox.put(("report", message)), task)
                output = run_task(rebuild(recipes[task.run]), task, report)
            except BaseException as exc:
                outbox.put(("failed", index, _sendable(exc), traceback.format_exc()))
                return
            outbox.put(("output", index, output))


def forget_parent_signals() -> None:
    """(A worker process) ignore SIGINT (Ctrl-C reaches the whole process group, and this
    process alone decides), and, forked, drop this process's SIGTERM handler (so that SIGTERM
    ends the worker) and its event loop's wake-up pipe (so that the worker's signals reach
    no loop here)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles (armlab's errors do), else a plain error with its text."""
    try:
        pickle.dumps(exc)
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class _Inbox:
    """What the workers sent: reports go to the collector, log events to the logger,
    outputs to ``finished(index, output)`` (:attr:`count` of them so far), a failure is raised here."""

    def __init__(self, outbox: Any, collector: Collector, processes: list[BaseProcess],
                 finished: Callable[[int, TaskOutput], Any]) -> None:
        self._outbox = outbox
        self._collector = collector
        self._processes = processes
        self._finished = finished
        self.count = 0

    def take_output(self, index: int, output: TaskOutput) -> None:
        """Task number ``index`` is done (here or in a worker)."""
        self.count += 1
        self._finished(index, output)

    def drain(self) -> None:
        """Take in everything sent so far, without waiting."""
        while True:
            try:
                message = self._outbox.get_nowait()
            except queue.Empty:
                return
            self._take(message)

    def wait(self) -> None:
        """Take in the next message; raise if a worker died (or all ended) before it came."""
        ended = all(p.exitcode is not None for p in self._processes)  # checked first: all they sent is queued
        try:
            message = self._outbox.get(timeout=POLL_SECONDS)
        except queue.Empty:
            for process in self._processes:
                if process.exitcode not in (None, 0):
                    raise RuntimeError(_died(process)) from None
            if ended:
                raise RuntimeError("the worker processes ended without sending every task's output") from None
            return
        self._take(message)

    def _take(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "output":
            self.take_output(message[1], message[2])
        elif kind == "log":
            replay_log(message[1], message[2])
        elif kind == "report":
            self._collector.receive(message[1])
        else:  # "failed"
            raise message[2] from WorkerTraceback(message[3])


def _died(process: BaseProcess) -> str:
    code = process.exitcode
    assert code is not None
    why = (f"killed by signal {-code}: if it ran out of memory, use fewer --workers" if code < 0 else
           "its error is printed above; a script must start experiments with workers under "
           "`if __name__ == \"__main__\":`, as each worker imports it again")
    return f"worker process {process.name} died (exit code {code}) before finishing its tasks: {why}"
