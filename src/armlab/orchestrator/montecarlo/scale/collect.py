"""Gather what the tasks of a Monte Carlo run report into progress calls and log lines.

A task runs one policy of one run (a ``[sweep]`` value) on one block of replicas, in this
process or in a worker.  Its reports travel as plain messages (:class:`Relay`), so they
read the same whether they were handed over in this process, sent through a queue or
recorded on a Dask worker.  The :class:`Collector` of the run then

* calls ``progress(label, done, total)`` with the trials of policy ``label`` over all its
  runs and blocks;
* sends one :class:`~armlab.events.CheckpointReached` per run, policy and checkpoint once
  every block of that policy has passed it, with the mean and standard error over all the
  run's replicas in replica order: the same event however the replicas were split;
* sends one :class:`~armlab.events.PolicyFinished` per run and policy once all its blocks
  are done, with the trials dispatched per replica (as every event counts them; the mean
  over replicas when a stopping rule ended some early).

The events go to the structured log (:func:`~armlab.log.log_event`) and to the listeners
the caller gave.  What a task logs itself (a policy's warning, say) is captured where it runs
(:func:`worker_logs`: never on a worker's stdout) and logged here by :func:`replay_log`, with
this process's logging set-up, whether the task ran in a worker process or on Dask.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import structlog

from armlab.events import CheckpointReached, ExperimentEvent, Listener, PolicyFinished
from armlab.log import get_logger, log_event
from armlab.orchestrator.montecarlo.metrics import mean_and_stderr
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput
from armlab.orchestrator.montecarlo.simulate import ProgressCallback
from armlab.plan import ExperimentPlan
from armlab.problem import Objective

__all__ = ["Collector", "Relay", "replay_log", "worker_logs"]

log = get_logger("armlab.orchestrator")

#: ``(run, start, kind, *arguments)``: one report of the block of run ``run`` starting at replica ``start``.
Message = tuple[Any, ...]


class Relay:
    """The :class:`~armlab.orchestrator.montecarlo.simulate.BlockReporter` of one task: each report
    becomes a message handed to ``send``."""

    def __init__(self, send: Callable[[Message], Any], task: Task) -> None:
        self._send = send
        self._block = (task.run, task.start)

    def progress(self, label: str, done: int) -> None:
        self._send((*self._block, "progress", label, done))

    def checkpoint(self, label: str, index: int, trials: int, values: np.ndarray) -> None:
        self._send((*self._block, "checkpoint", label, index, trials, values))

    def finished(self, label: str, trials: int, wall_seconds: float) -> None:
        self._send((*self._block, "finished", label, trials, wall_seconds))


#: Where the log events of the task running in this thread go (``send(method, event)``).
_log_target: ContextVar[Callable[[str, dict[str, Any]], Any] | None] = ContextVar("armlab_task_logs", default=None)


def _to_task_target(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog processor of a worker: hands the event to the running task's target, if
    any, and drops it (a worker never prints)."""
    send = _log_target.get()
    if send is not None:
        send(method, event)
    raise structlog.DropEvent


@contextmanager
def worker_logs(send: Callable[[str, dict[str, Any]], Any]) -> Iterator[None]:
    """In a worker process (local or Dask): while the block runs, every structlog event of
    this thread goes to ``send(method, event)`` instead of the worker's stdout; events of
    other threads, or outside the block, are dropped.  Configures structlog for the process."""
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, _to_task_target])
    token = _log_target.set(send)
    try:
        yield
    finally:
        _log_target.reset(token)


def replay_log(method: str, event: dict[str, Any]) -> None:
    """Log here an event that :func:`worker_logs` captured in a worker."""
    getattr(log, method)(**event)


class Collector:
    """Aggregates the reports of ``tasks`` (over ``plans``, the runs) as the module says."""

    def __init__(
        self,
        plans: Sequence[ExperimentPlan],
        tasks: Sequence[Task],
        progress: ProgressCallback | None,
        listeners: Sequence[Listener] = (),
    ) -> None:
        self._plans = plans
        self._callback = progress
        self._listeners = (log_event, *listeners)
        self._width = {(t.run, plans[t.run].policies[t.policy].label, t.start): t.stop - t.start for t in tasks}
        self._blocks = Counter((run, label) for run, label, _ in self._width)
        self._totals: Counter[str] = Counter()
        for plan in plans:
            for spec in plan.policies:
                self._totals[spec.label] += plan.config.replicas * plan.config.problem.budget
        self._done: dict[tuple[int, str, int], int] = {}
        self._label_done: Counter[str] = Counter()
        self._columns: defaultdict[tuple[int, str, int], dict[int, np.ndarray]] = defaultdict(dict)
        self._ends: defaultdict[tuple[int, str], list[tuple[int, float, int]]] = defaultdict(list)

    def restore(self, task: Task, output: TaskOutput) -> None:
        """Take ``task`` as finished with ``output`` (saved by an interrupted run): its
        checkpoints and end count as reported, so progress and log lines cover every block."""
        plan = self._plans[task.run]
        label = plan.policies[task.policy].label
        values = output.cp_regret if plan.bandits[0].objective is Objective.REGRET else output.cp_error
        for index, trials in enumerate(plan.config.checkpoint_list()):
            self._checkpoint(task.run, task.start, label, index, trials, values[:, index])
        self._finished(task.run, task.start, label, output.trials, output.wall_seconds)

    def relay(self, task: Task) -> Relay:
        """The reporter of ``task`` when it runs in this process."""
        return Relay(self.receive, task)

    def receive(self, message: Message) -> None:
        """Take one report (from :class:`Relay`, wherever the task ran)."""
        run, start, kind, label, *arguments = message
        {"progress": self._progress, "checkpoint": self._checkpoint, "finished": self._finished}[kind](
            run, start, label, *arguments
        )

    def _progress(self, run: int, start: int, label: str, done: int) -> None:
        key = (run, label, start)
        self._label_done[label] += done - self._done.get(key, 0)
        self._done[key] = done
        if self._callback is not None:
            self._callback(label, self._label_done[label], self._totals[label])

    def _checkpoint(self, run: int, start: int, label: str, index: int, trials: int, values: np.ndarray) -> None:
        columns = self._columns[run, label, index]
        columns[start] = values
        if len(columns) < self._blocks[run, label]:
            return
        del self._columns[run, label, index]
        merged = np.concatenate([columns[s] for s in sorted(columns)])
        (mean,), (stderr,) = mean_and_stderr(merged[:, None])
        plan = self._plans[run]
        metric = "regret_mean" if plan.bandits[0].objective is Objective.REGRET else "error_rate"
        self._emit(CheckpointReached(trials=trials, policy=label, metric=metric, value=float(mean),
                                     stderr=float(stderr), budget=plan.config.problem.budget))

    def _finished(self, run: int, start: int, label: str, trials: int, wall_seconds: float) -> None:
        # a block that stopped early counts in full: its bar share is done
        self._progress(run, start, label, self._width[run, label, start] * self._plans[run].config.problem.budget)
        ends = self._ends[run, label]
        ends.append((trials, wall_seconds, self._width[run, label, start]))
        if len(ends) == self._blocks[run, label]:
            self._emit(PolicyFinished(policy=label, trials=_per_replica(ends),
                                      wall_seconds=round(sum(w for _, w, _ in ends), 4),
                                      budget=self._plans[run].config.problem.budget))

    def _emit(self, event: ExperimentEvent) -> None:
        for listener in self._listeners:
            listener(event)


def _per_replica(ends: list[tuple[int, float, int]]) -> float:
    """The mean trials dispatched per replica over blocks' ``(trials, seconds, replicas)``:
    an ``int`` when every replica dispatched as many (the budget), else rounded to 4 digits."""
    mean = sum(t for t, _, _ in ends) / sum(r for _, _, r in ends)
    return int(mean) if mean.is_integer() else round(mean, 4)
