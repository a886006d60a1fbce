"""Run every policy of a simulated experiment concurrently and aggregate their metrics."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
from anyio.abc import ObjectSendStream

from armlab.log import get_logger
from armlab.orchestrator.engine import Simulation, StepObserver
from armlab.orchestrator.metrics import mean_and_stderr
from armlab.plan import ExperimentPlan, PolicySpec
from armlab.plugins.interfaces import RewardSource
from armlab.problem import Objective

__all__ = ["PolicyResult", "ProgressCallback", "simulate"]

log = get_logger("armlab.orchestrator")

#: Simulated steps between yields to the event loop (keeps sibling tasks responsive).
STEPS_PER_YIELD = 64


@dataclass(frozen=True)
class CheckpointEvent:
    """Aggregated metrics of one policy at one checkpoint (sent to the collector)."""

    label: str
    trials: int
    value: float
    stderr: float | None


@dataclass
class PolicyResult:
    """Per-replica results of one policy: what summaries and merges are built from."""

    label: str
    spec: PolicySpec
    replicas: np.ndarray
    cp_error: np.ndarray
    cp_regret: np.ndarray
    stopped_at: np.ndarray
    extra: dict[str, Any]  # entries from step observers
    trials: int
    wall_seconds: float  # seconds spent in this policy's own steps

    def summary(self, objective: Objective, budget: int) -> dict[str, Any]:
        """This policy's entry of ``summary.json``."""
        out: dict[str, Any] = {"plugin": self.spec.plugin, "params": self.spec.params.model_dump(mode="json")}
        if objective is Objective.REGRET:
            out["regret_mean"], out["regret_stderr"] = mean_and_stderr(self.cp_regret)
        else:
            out["error_rate"], out["error_stderr"] = mean_and_stderr(self.cp_error)
        if self.spec.cls.stopping_rule:
            stopped = self.stopped_at >= 0
            times = np.where(stopped, self.stopped_at, budget).astype(np.float64)[:, None]
            (mean,), (stderr,) = mean_and_stderr(times)
            out["stopping_time_mean"], out["stopping_time_stderr"] = mean, stderr
            out["stopped_fraction"] = float(stopped.mean())
            if objective is not Objective.REGRET:
                out["error_rate_at_stop"] = float(self.cp_error[:, -1].mean())
        out.update(self.extra)
        out["wall_seconds"] = self.wall_seconds
        out["run_steps_per_second"] = self.trials / self.wall_seconds if self.wall_seconds > 0 else None
        return out


def prepare_sources(plan: ExperimentPlan, replicas: np.ndarray, seed: int) -> list[RewardSource]:
    """Create and reset the simulated source of every bandit for a block of replicas
    (bandit ``b``'s instances and rewards are keyed by ``b``)."""
    sources = []
    for bandit in range(len(plan.bandits)):
        source = plan.create_source(bandit)
        assert isinstance(source, RewardSource)
        source.reset(replicas, seed, bandit)
        sources.append(source)
    return sources


def allocator_entry(plan: ExperimentPlan, sim: Simulation) -> dict[str, Any]:
    """The allocator a multi-bandit policy ran with, for its summary (nothing otherwise)."""
    if not plan.multi_bandit:
        return {}
    allocator = sim.allocator
    return {"allocator": {"plugin": allocator.name, "params": allocator.params.model_dump(mode="json")}}


#: Called as ``progress(label, trials_dispatched, trials_total)`` while a policy runs.
ProgressCallback = Callable[[str, int, int], None]


def make_observers(plan: ExperimentPlan) -> list[StepObserver]:
    """Fresh step observers for one run of ``plan``: those its registry's plugins give
    (``armlab_step_observers``; the built-in greedy-confidence-pursuit plugin tracks
    ``[metrics] confidence`` and bandit completions in multi-bandit runs)."""
    return [observer for found in plan.registry.pm.hook.armlab_step_observers(plan=plan) for observer in found]


async def simulate(
    plan: ExperimentPlan,
    *,
    seed: int,
    replicas: np.ndarray,
    progress: ProgressCallback | None = None,
) -> list[PolicyResult]:
    """Run all policies of ``plan`` on ``replicas`` (global ids); one task per policy."""
    checkpoints = plan.config.checkpoint_list()
    sources = prepare_sources(plan, replicas, seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    results: dict[str, PolicyResult] = {}
    total = int(replicas.size) * plan.config.problem.budget
    send, receive = anyio.create_memory_object_stream[CheckpointEvent](max_buffer_size=256)

    async def run_policy(spec: PolicySpec, events: ObjectSendStream[CheckpointEvent]) -> None:
        async with events:
            busy = 0.0  # time spent in this policy's own steps (tasks interleave)
            start = time.perf_counter()
            sim = Simulation(
                policy_factory=spec.create,
                sources=sources,
                problems=problems,
                allocator=plan.create_allocator(spec),
                feedback=plan.config.feedback,
                seed=seed,
                replicas=replicas,
                checkpoints=checkpoints,
                observers=make_observers(plan),
            )
            busy += time.perf_counter() - start
            steps = 0
            while not sim.finished:
                start = time.perf_counter()
                completed = sim.step()
                busy += time.perf_counter() - start
                for cp in completed:
                    column = sim.cp_regret if problems[0].objective is Objective.REGRET else sim.cp_error
                    mean, stderr = mean_and_stderr(column[:, cp.index : cp.index + 1])
                    await events.send(CheckpointEvent(spec.label, cp.trials, mean[0], stderr[0]))
                steps += 1
                if steps % STEPS_PER_YIELD == 0:
                    if progress is not None:
                        progress(spec.label, int(sim.dispatched.sum()), total)
                    await anyio.sleep(0)
            results[spec.label] = PolicyResult(
                label=spec.label,
                spec=spec,
                replicas=replicas,
                cp_error=sim.cp_error,
                cp_regret=sim.cp_regret,
                stopped_at=sim.stopped_at,
                extra={**allocator_entry(plan, sim),
                       **{k: v for obs in sim.observers for k, v in obs.summary().items()}},
                trials=int(sim.dispatched.sum()),
                wall_seconds=busy,
            )
            if progress is not None:
                progress(spec.label, total, total)
            log.info("policy_finished", policy=spec.label, trials=results[spec.label].trials,
                     wall_seconds=round(results[spec.label].wall_seconds, 4))

    metric = "regret_mean" if problems[0].objective is Objective.REGRET else "error_rate"
    async with anyio.create_task_group() as tg:
        async with send:
            for spec in plan.policies:
                tg.start_soon(run_policy, spec, send.clone())
        async with receive:
            async for event in receive:
                log.info("checkpoint", policy=event.label, trials=event.trials,
                         **{metric: event.value, "stderr": event.stderr})
    return [results[spec.label] for spec in plan.policies]
