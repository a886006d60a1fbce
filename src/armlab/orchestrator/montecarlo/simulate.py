"""Run the policies of a simulated experiment on a block of replicas, one after the other.

This is the synchronous core of every Monte Carlo run: the runner calls it in this process,
worker processes and Dask workers call it for their tasks (:mod:`armlab.orchestrator.montecarlo.scale.tasks`).
It logs nothing itself: what a block reaches (progress, checkpoints, a policy's end) goes
to a :class:`BlockReporter`, and the collector of the run
(:class:`~armlab.orchestrator.montecarlo.scale.collect.Collector`) turns the reports of all blocks into
progress calls and log lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from armlab.orchestrator.montecarlo.engine import Simulation, StepObserver
from armlab.orchestrator.montecarlo.metrics import mean_and_stderr
from armlab.plan import ExperimentPlan, PolicySpec
from armlab.plugins.interfaces import RewardSource
from armlab.problem import Objective, Problem

__all__ = ["BlockReporter", "PolicyResult", "ProgressCallback", "simulate"]

#: Simulated steps between two progress reports of a running policy.
STEPS_PER_REPORT = 64


class BlockReporter(Protocol):
    """Receives what the policies running on one block of replicas reach."""

    def progress(self, label: str, done: int) -> None:
        """Policy ``label`` has dispatched ``done`` trials over the block's replicas."""

    def checkpoint(self, label: str, index: int, trials: int, values: np.ndarray) -> None:
        """Every replica of the block has passed checkpoint ``index`` (``trials`` trials);
        ``values`` holds each replica's metric there (regret, or error for the other objectives)."""

    def finished(self, label: str, trials: int, wall_seconds: float) -> None:
        """Policy ``label`` is done on the block: ``trials`` dispatched in ``wall_seconds``."""


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
    wall_seconds: float  # seconds this policy ran (summed over replica blocks)

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


#: Called as ``progress(label, done, total)`` while policy ``label`` runs: trials dispatched
#: and to dispatch over all runs of the experiment (every value of a ``[sweep]``).
ProgressCallback = Callable[[str, int, int], None]


def make_observers(plan: ExperimentPlan) -> list[StepObserver]:
    """Fresh step observers for one run of ``plan``: those its registry's plugins give
    (``armlab_step_observers``; the built-in greedy-confidence-pursuit plugin tracks
    ``[metrics] confidence`` and bandit completions in multi-bandit runs)."""
    labels = [bandit.label for bandit in plan.bandits] if plan.multi_bandit else None
    found = plan.registry.pm.hook.armlab_step_observers(metrics=plan.config.metrics, bandit_labels=labels, plan=plan)
    return [observer for observers in found for observer in observers]


def simulate(
    plan: ExperimentPlan,
    *,
    seed: int,
    replicas: np.ndarray,
    report: BlockReporter,
    policies: Sequence[PolicySpec] | None = None,
) -> list[PolicyResult]:
    """Run each policy of ``plan`` (or just ``policies``) on ``replicas`` (global ids), one
    after the other.  They share the sources: a reward depends only on the seed, the replica,
    the arm and its pull count, never on which policy asked first."""
    sources = prepare_sources(plan, replicas, seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    return [
        _run_policy(plan, spec, sources, problems, seed, replicas, report)
        for spec in (plan.policies if policies is None else policies)
    ]


def new_simulation(
    plan: ExperimentPlan,
    spec: PolicySpec,
    sources: list[RewardSource],
    problems: list[Problem],
    seed: int,
    replicas: np.ndarray,
) -> Simulation:
    """The simulation of policy ``spec`` of ``plan`` on ``replicas``, before its first step
    (a cost probe steps one a little way, :mod:`armlab.orchestrator.montecarlo.probe`)."""
    return Simulation(
        policy_factory=spec.create,
        sources=sources,
        problems=problems,
        allocator=plan.create_allocator(spec),
        feedback=plan.config.feedback,
        seed=seed,
        replicas=replicas,
        checkpoints=plan.config.checkpoint_list(),
        observers=make_observers(plan),
    )


def _run_policy(
    plan: ExperimentPlan,
    spec: PolicySpec,
    sources: list[RewardSource],
    problems: list[Problem],
    seed: int,
    replicas: np.ndarray,
    report: BlockReporter,
) -> PolicyResult:
    """Step one policy's simulation to its end, reporting checkpoints and progress on the way."""
    started = time.perf_counter()
    sim = new_simulation(plan, spec, sources, problems, seed, replicas)
    regret = problems[0].objective is Objective.REGRET
    steps = 0
    while not sim.finished:
        for cp in sim.step():
            metric = sim.cp_regret if regret else sim.cp_error
            report.checkpoint(spec.label, cp.index, cp.trials, metric[:, cp.index])
        steps += 1
        if steps % STEPS_PER_REPORT == 0:
            report.progress(spec.label, int(sim.dispatched.sum()))
    result = PolicyResult(
        label=spec.label,
        spec=spec,
        replicas=replicas,
        cp_error=sim.cp_error,
        cp_regret=sim.cp_regret,
        stopped_at=sim.stopped_at,
        extra={**allocator_entry(plan, sim), **{k: v for obs in sim.observers for k, v in obs.summary().items()}},
        trials=int(sim.dispatched.sum()),
        wall_seconds=time.perf_counter() - started,
    )
    report.finished(spec.label, result.trials, result.wall_seconds)
    return result
