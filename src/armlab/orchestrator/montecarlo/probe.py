"""A short, silent probe of one policy of a simulated run: its seconds per trial and replica.

Two things need a policy's cost before its run starts: the estimate of the run's time
(``armlab validate``, the first log line of ``armlab run``) and the order in which workers
take tasks (the costliest first, :mod:`armlab.orchestrator.montecarlo.scale.task_costs`).
Both step the policy's simulation a little way, on sources drawn for the probe and thrown
away, so nothing the probe does reaches a run's numbers.  What the policy logs while it is
probed (a warning about its parameters, say) is dropped: the run itself logs it, once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import structlog.testing

from armlab.orchestrator.montecarlo.simulate import new_simulation, prepare_sources
from armlab.plan import ExperimentPlan, PolicySpec

__all__ = ["seconds_per_trial"]


def seconds_per_trial(
    plan: ExperimentPlan,
    spec: PolicySpec,
    *,
    replicas: int,
    steps: int | None = None,
    seconds: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
    warmup: int = 0,
) -> float:
    """Seconds policy ``spec`` of ``plan`` spends per trial and replica, measured on at most
    ``replicas`` replicas over its first ``steps`` steps, or until ``seconds`` have passed
    (whichever comes first; a run that finishes sooner has measured all of itself).
    ``clock`` measures the seconds: the wall clock, or ``time.thread_time`` for this
    thread's CPU time, which other processes on the machine do not inflate.  The first
    ``warmup`` steps are run untimed (a policy's first pull of each arm is alike for all)."""
    rows = np.arange(min(plan.config.replicas, replicas), dtype=np.int64)
    with structlog.testing.capture_logs():
        sources = prepare_sources(plan, rows, plan.config.seed)
        problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
        sim = new_simulation(plan, spec, sources, problems, plan.config.seed, rows)
        for _ in range(warmup):
            if sim.finished:
                break
            sim.step()
        before = int(sim.dispatched.sum())
        started = clock()
        taken = 0
        while not sim.finished and (steps is None or taken < steps):
            sim.step()
            taken += 1
            if seconds is not None and clock() - started >= seconds:
                break
        elapsed = clock() - started
    return elapsed / max(1, int(sim.dispatched.sum()) - before)
