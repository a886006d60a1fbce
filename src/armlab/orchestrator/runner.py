"""Entry points that run a whole experiment (simulated or live) and build its summary."""

from __future__ import annotations

import asyncio
import datetime
import functools
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import structlog

from armlab._version import __version__
from armlab.config import ExperimentConfig, load_config, validate_config
from armlab.errors import ConfigError
from armlab.events import Listener
from armlab.live_rules import has_live_source, refuse_ignored_live_fields
from armlab.log import get_logger, log_event
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.montecarlo.comparisons import paired_comparisons
from armlab.orchestrator.montecarlo.scale.saved_tasks import RunInterrupted, SavedTasks
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, merge_results
from armlab.orchestrator.montecarlo.simulate import PolicyResult, ProgressCallback
from armlab.orchestrator.result import ExperimentResult
from armlab.plan import ExperimentPlan, build_plan
from armlab.plugins.registry import Registry, default_registry
from armlab.provenance import git_commit

__all__ = ["ExperimentResult", "run_experiment", "run_experiment_async"]

#: What ``run_experiment`` accepts as an experiment: a TOML path, a config, or its tables as a dict.
ConfigInput = ExperimentConfig | Mapping[str, Any] | str | Path

log = get_logger("armlab.orchestrator")


def _resolve(
    config: ConfigInput, seed: int | None, replicas: int | None, registry: Registry | None
) -> tuple[ExperimentConfig, list[tuple[Any, ExperimentPlan]], Registry]:
    """Load and validate the config and every sweep variant before anything runs."""
    if isinstance(config, Mapping):
        config = validate_config(dict(config))
    elif not isinstance(config, ExperimentConfig):
        config = load_config(config)
    registry = registry or default_registry()
    # before the overrides: the config as given still says whether it set replicas
    refuse_ignored_live_fields(config, has_live_source(config, registry), replicas=replicas,
                               option="the replicas argument")
    config = config.with_overrides(seed=seed, replicas=replicas)
    plans = [(value, build_plan(variant, registry)) for value, variant in config.variants()]
    return config, plans, registry


async def run_experiment_async(
    config: ConfigInput,
    *,
    seed: int | None = None,
    replicas: int | None = None,
    out_dir: str | Path | None = None,
    registry: Registry | None = None,
    progress: ProgressCallback | None = None,
    scale: ShardRunner | None = None,
    journal: str | Path | None = None,
    listeners: Sequence[Listener] = (),
) -> ExperimentResult:
    """Run an experiment inside a running event loop; see :func:`run_experiment`.

    A simulated experiment is CPU work: it runs in a worker thread, so the loop stays free,
    and ``progress`` is called on the loop's thread.
    """
    config, plans, registry = _resolve(config, seed, replicas, registry)
    if plans[0][1].live:
        return await _live_experiment(plans[0][1], registry, out_dir, journal, listeners)
    on_loop = None if progress is None else functools.partial(anyio.from_thread.run_sync, progress)
    return await anyio.to_thread.run_sync(
        functools.partial(_simulated_experiment, config, plans, registry, out_dir, on_loop, scale, journal, listeners)
    )


def _simulated_experiment(
    config: ExperimentConfig,
    plans: list[tuple[Any, ExperimentPlan]],
    registry: Registry,
    out_dir: str | Path | None,
    progress: ProgressCallback | None,
    scale: ShardRunner | None,
    journal: str | Path | None,
    listeners: Sequence[Listener],
) -> ExperimentResult:
    """Every run of a simulated experiment, in this process or scaled out by ``scale``."""
    base = plans[0][1]
    with structlog.contextvars.bound_contextvars(experiment=base.config.name):
        saved = None if out_dir is None else SavedTasks.open(out_dir, config)
        started = _started(plans, journal)
        try:
            runs = (scale or ShardRunner()).run([plan for _, plan in plans], progress, listeners, saved,
                                                lambda run, results: _run_summary(plans[run][1], results))
        except KeyboardInterrupt:
            if saved is None:
                raise
            summary = _partial_summary(config, plans, saved.load([plan for _, plan in plans]))
            raise RunInterrupted(_finished(summary, started, registry, out_dir, config), saved.folder) from None
        summary = runs[0] if len(plans) == 1 else _sweep_summary(config, plans, runs)
        result = _finished(summary, started, registry, out_dir, config)
        if saved is not None:
            saved.remove()
        return result


def _partial_summary(
    config: ExperimentConfig, plans: list[tuple[Any, ExperimentPlan]], outputs: dict[Task, TaskOutput]
) -> dict[str, Any]:
    """The summary of the policies (per run) whose every replica finished, marked
    ``"partial": true``, with ``"missing"``: per run and unfinished policy, the replicas done."""
    results, missing = [], []
    for run, (value, plan) in enumerate(plans):
        whole = []
        for index, spec in enumerate(plan.policies):
            done = sum(t.stop - t.start for t in outputs if (t.run, t.policy) == (run, index))
            if done == plan.config.replicas:
                whole.append(index)
            else:
                missing.append({"run": run, "sweep_value": value, "policy": spec.label, "replicas_done": done,
                                "replicas": plan.config.replicas})
        results.append(merge_results(plan, run, outputs, whole))
    runs = [_run_summary(plan, run_results) for (_, plan), run_results in zip(plans, results, strict=True)]
    summary = runs[0] if len(plans) == 1 else _sweep_summary(config, plans, runs)
    summary["partial"] = True
    summary["missing"] = missing
    return summary


async def _live_experiment(
    plan: ExperimentPlan,
    registry: Registry,
    out_dir: str | Path | None,
    journal: str | Path | None,
    listeners: Sequence[Listener] = (),
) -> ExperimentResult:
    with structlog.contextvars.bound_contextvars(experiment=plan.config.name):
        started = _started([(None, plan)], journal)
        return _finished(await _run_live(plan, registry, journal, listeners), started, registry, out_dir,
                         plan.config)


def _started(plans: list[tuple[Any, ExperimentPlan]], journal: str | Path | None) -> float:
    """Refuse a journal for a simulated experiment, log its start, return the start time."""
    base = plans[0][1]
    cfg = base.config
    if journal is not None and not base.live:
        raise ConfigError(
            f"a journal records live trials, but source {base.source_cls.name!r} is simulated "
            "(its runs are reproducible from the seed): drop --journal"
        )
    log.info("experiment_started", seed=cfg.seed, replicas=1 if base.live else cfg.replicas, budget=cfg.problem.budget,
             objective=cfg.problem.objective.value, policies=[p.label for p in base.policies],
             source=base.source_cls.name, live=base.live, runs=len(plans))
    return time.perf_counter()


def provenance(config: ExperimentConfig) -> dict[str, Any]:
    """What reproduces a run on its own: the whole resolved config (plugin parameters
    included), the versions of armlab (with its git commit when run from a checkout), numpy
    and Python, the platform, the time, the command."""
    return {
        "config": config.model_dump(mode="json"),
        "armlab": __version__,
        "armlab_commit": git_commit(),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": list(sys.argv),
    }


def _finished(
    summary: dict[str, Any], started: float, registry: Registry, out_dir: str | Path | None,
    config: ExperimentConfig,
) -> ExperimentResult:
    """Stamp the wall time and the provenance, let every result sink write ``summary`` to
    ``out_dir``, log the end."""
    summary["wall_seconds"] = time.perf_counter() - started
    summary["provenance"] = provenance(config)
    if out_dir is not None:
        for info in registry.infos("sink"):
            path = info.cls().write(summary, Path(out_dir))
            log.info("results_written", sink=info.name, path=str(path))
    log.info("experiment_finished", wall_seconds=round(summary["wall_seconds"], 4))
    return ExperimentResult(summary)


def _header(cfg: ExperimentConfig, replicas: int) -> dict[str, Any]:
    return {
        "name": cfg.name,
        "seed": cfg.seed,
        "replicas": replicas,
        "budget": cfg.problem.budget,
        "objective": cfg.problem.objective.value,
        "checkpoints": cfg.checkpoint_list(),
    }


def _run_summary(plan: ExperimentPlan, results: list[PolicyResult]) -> dict[str, Any]:
    cfg = plan.config
    summary = _header(cfg, cfg.replicas)
    summary["policies"] = {r.label: r.summary(cfg.problem.objective, cfg.problem.budget) for r in results}
    if len(results) > 1:
        summary["comparisons"] = paired_comparisons(results, cfg.problem.objective)
    return summary


def _sweep_summary(
    config: ExperimentConfig, plans: list[tuple[Any, ExperimentPlan]], runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """One run per sweep value (``runs``: their summaries); per policy, the final metric of
    each run side by side."""
    for (value, _), run in zip(plans, runs, strict=True):
        run["sweep_value"] = value
    assert config.sweep is not None
    summary = _header(config, config.replicas)
    summary["budget"] = [run["budget"] for run in runs]
    summary["checkpoints"] = [run["checkpoints"][-1] for run in runs]
    summary["sweep"] = {"parameter": config.sweep.parameter, "values": config.sweep.values}
    regret = config.problem.objective.value == "regret"
    keys = ("regret_mean", "regret_stderr") if regret else ("error_rate", "error_stderr")
    summary["policies"] = {}
    for label, first in runs[0]["policies"].items():
        if any(label not in run["policies"] for run in runs):  # a partial summary: unfinished in some run
            continue
        entry = {"plugin": first["plugin"], "params": first["params"]}
        for key in keys:
            entry[key] = [run["policies"][label][key][-1] for run in runs]
        entry["wall_seconds"] = sum(run["policies"][label]["wall_seconds"] for run in runs)
        trials = sum(run["replicas"] * run["budget"] for run in runs)
        entry["run_steps_per_second"] = trials / entry["wall_seconds"] if entry["wall_seconds"] else None
        summary["policies"][label] = entry
    summary["runs"] = runs
    return summary


async def _run_live(
    plan: ExperimentPlan, registry: Registry, journal: str | Path | None, listeners: Sequence[Listener]
) -> dict[str, Any]:
    """One live replica; with ``journal``, every event is recorded and an existing journal resumed."""
    if journal is None:
        session = LiveSession.from_plan(plan)
    else:
        session = LiveSession.open(journal=journal, config=plan.config, registry=registry)
    for listener in (log_event, *listeners):  # the log is silent unless the application configured it
        session.experiment.add_listener(listener)
    try:
        await session.run()
    finally:
        session.close()
    summary = _header(plan.config, 1)
    summary["policies"] = session.policy_summary()
    return summary


def _refuse_running_loop() -> None:
    """A live run starts an event loop, which cannot happen inside a running one (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "run_experiment() cannot run a live experiment inside a running event loop (a Jupyter notebook, "
        "an async function): use `await armlab.run_experiment_async(...)` there, with the same arguments"
    )


def run_experiment(
    config: ConfigInput,
    *,
    seed: int | None = None,
    replicas: int | None = None,
    out_dir: str | Path | None = None,
    registry: Registry | None = None,
    progress: ProgressCallback | None = None,
    scale: ShardRunner | None = None,
    journal: str | Path | None = None,
    listeners: Sequence[Listener] = (),
) -> ExperimentResult:
    """Run an experiment and return its summary (the content of ``summary.json``, as an
    :class:`~armlab.orchestrator.result.ExperimentResult`: a ``dict`` with ``.to_pandas()``).

    ``config`` is a TOML path, an :class:`~armlab.config.ExperimentConfig` or the same tables
    as a dict; ``seed`` and
    ``replicas`` override the file; with ``out_dir`` every registered result sink writes its
    file there; ``progress(label, done, total)`` is called as trials are dispatched (counted
    over all runs of the experiment).  A config with a ``[sweep]`` runs once per value; its
    summary holds, per policy, the final metric of each run (and the runs themselves under
    ``"runs"``).  A simulated experiment runs in the calling thread, without an event loop;
    ``scale`` (a :class:`~armlab.orchestrator.montecarlo.scale.shards.ShardRunner`) spreads it over worker
    processes or Dask, and the numbers do not change.  A live experiment with ``journal``
    (a SQLite file) records every event before acknowledging it and, if the journal exists,
    replays it and continues the run.  ``listeners`` receive the experiment's typed events
    (:mod:`armlab.events`: every trial of a live run; checkpoints and finished policies of
    a simulated one).  Mirrors ``armlab run``.

    A simulated experiment needs no event loop, so it also runs inside one (a Jupyter
    notebook); a live one starts its own loop, so inside a running loop it is refused with
    a pointer to ``await run_experiment_async(...)``.
    """
    scale = scale or ShardRunner()
    with scale.warm():  # worker processes start while the config is read and checked
        config, plans, registry = _resolve(config, seed, replicas, registry)
        if not plans[0][1].live:
            return _simulated_experiment(config, plans, registry, out_dir, progress, scale, journal, listeners)
    _refuse_running_loop()
    return anyio.run(_live_experiment, plans[0][1], registry, out_dir, journal, listeners, backend="asyncio")
