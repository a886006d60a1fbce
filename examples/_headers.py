"""Results files behind the example headers: run an experiment, record it, check it again.

An example's header states what its config gives when run.  Those numbers come from a
*results file* written by the example's ``generate.py --run`` (this module does the work):

* the full run, exactly as ``armlab run CONFIG`` performs it (same seed, replicas, budget):
  per policy and checkpoint, every replica's outcome (error 0/1 or regret), from which the
  header's means and standard errors are computed;
* the git commit the run was made at, the replicas and the budget (the scale);
* a *check*: a cheap re-run of the same config at the shipped seed, on the first few
  replicas with a reduced budget, recorded with each replica's pull counts per arm and its
  outcomes.  ``tests`` re-run the check and compare: a change in any algorithm that moves
  its pulls or outcomes fails until the results (and the header) are regenerated.

No wall times are recorded: they depend on the machine and its load.

``generate.py`` scripts import this file by path (``examples/`` is not a package).
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from armlab.config import ExperimentConfig, validate_config
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.metrics import mean_and_stderr
from armlab.orchestrator.montecarlo.simulate import make_observers, prepare_sources
from armlab.plan import build_plan
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry
from armlab.problem import Objective
from armlab.provenance import git_commit

FORMAT = 1


def registry() -> Registry:
    """Built-in plugins only: results must not depend on what else is installed."""
    return Registry(get_plugin_manager(load_entrypoints=False))


def config_from_text(text: str) -> ExperimentConfig:
    return validate_config(tomllib.loads(text))


def scaled(config: ExperimentConfig, replicas: int, budget: int, checkpoints: list[int]) -> ExperimentConfig:
    """``config`` with fewer replicas, another budget and explicit checkpoints (same seed)."""
    data = config.model_dump(mode="python")
    data.update(replicas=replicas, checkpoint_every=None, checkpoints=checkpoints)
    data["problem"]["budget"] = budget
    return validate_config(data)


def _metric(config: ExperimentConfig) -> str:
    return "regret" if config.problem.objective is Objective.REGRET else "error"


def encode(values: np.ndarray) -> str | list[float]:
    """Per-replica outcomes at one checkpoint: a string of 0/1 digits (one per replica) for
    errors of single-bandit runs, else the values rounded to 6 significant digits."""
    if np.isin(values, (0.0, 1.0)).all():
        return "".join("1" if v else "0" for v in values)
    return [float(f"{v:.6g}") for v in values]


def decode(column: str | list[float]) -> np.ndarray:
    if isinstance(column, str):
        return np.array([float(c) for c in column])
    return np.asarray(column, dtype=np.float64)


def run(config: ExperimentConfig, pulls: bool = False) -> dict[str, Any]:
    """Run every policy of ``config`` in the engine, as ``armlab run`` does (same seed, sources,
    allocator and observers); per policy and checkpoint, every replica's outcome, and with
    ``pulls`` every replica's pulls per arm at the end (summed over bandits)."""
    plan = build_plan(config, registry())
    replicas = np.arange(config.replicas)
    sources = prepare_sources(plan, replicas, config.seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    metric = _metric(config)
    policies = {}
    for spec in plan.policies:
        sim = Simulation(
            policy_factory=spec.create, sources=sources, problems=problems, allocator=plan.create_allocator(spec),
            feedback=config.feedback, seed=config.seed, replicas=replicas, checkpoints=config.checkpoint_list(),
            observers=make_observers(plan),
        )
        while not sim.finished:
            sim.step()
        values = sim.cp_regret if metric == "regret" else sim.cp_error
        entry: dict[str, Any] = {"outcomes": [encode(values[:, c]) for c in range(values.shape[1])]}
        if pulls:
            entry["pulls"] = sum(stats.pulls for stats in sim.stats).tolist()
        policies[spec.label] = entry
    return {"replicas": config.replicas, "budget": config.problem.budget, "checkpoints": config.checkpoint_list(),
            "metric": metric, "policies": policies}


def check_config(config: ExperimentConfig, check: dict[str, Any]) -> ExperimentConfig:
    return scaled(config, check["replicas"], check["budget"], check["checkpoints"])


def record(config: ExperimentConfig, check_replicas: int, check_budget: int, check_points: int = 4) -> dict[str, Any]:
    """The results file's content: the full run, its commit and scale, and the check."""
    points = sorted({max(1, round(check_budget * (i + 1) / check_points)) for i in range(check_points)})
    small = scaled(config, check_replicas, check_budget, points)
    return {
        "format": FORMAT,
        "name": config.name,
        "seed": config.seed,
        "commit": git_commit(),
        "run": run(config),
        "check": run(small, pulls=True),
    }


def differences(config: ExperimentConfig, results: dict[str, Any]) -> list[str]:
    """Re-run the check recorded in ``results``; what differs from the record (empty: equal)."""
    check = results["check"]
    fresh = run(check_config(config, check), pulls=True)
    problems = []
    if set(fresh["policies"]) != set(check["policies"]):
        return [f"policies {sorted(fresh['policies'])} != recorded {sorted(check['policies'])}"]
    for label, now in fresh["policies"].items():
        then = check["policies"][label]
        if now["pulls"] != then["pulls"]:
            problems.append(f"{label}: pulls per arm differ from the record")
        for c, (a, b) in enumerate(zip(now["outcomes"], then["outcomes"], strict=True)):
            if not np.allclose(decode(a), decode(b), rtol=1e-5, atol=1e-9):
                problems.append(f"{label}: outcomes at checkpoint {check['checkpoints'][c]} differ")
    return problems


def summary(results: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """Per policy the mean and standard error at every checkpoint of the full run (as ``armlab run``)."""
    out = {}
    for label, entry in results["run"]["policies"].items():
        values = np.stack([decode(column) for column in entry["outcomes"]], axis=1)
        mean, stderr = mean_and_stderr(values)
        out[label] = {"mean": mean, "stderr": [math.nan if s is None else s for s in stderr]}
    return out


def at(results: dict[str, Any], label: str, trials: int) -> tuple[float, float]:
    """Mean and standard error of ``label`` at checkpoint ``trials``."""
    index = results["run"]["checkpoints"].index(trials)
    entry = summary(results)[label]
    return entry["mean"][index], entry["stderr"][index]


def read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def paragraph(text: str, width: int = 96) -> list[str]:
    """``text`` word-wrapped into lines of at most ``width`` characters (never before a " %")."""
    lines, line = [], ""
    for word in text.replace(" %", "\0%").split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [part.replace("\0", " ") for part in lines + ([line] if line else [])]


def wrap(items: list[str], width: int = 96, end: str = ".") -> list[str]:
    """``items`` joined by ", " into lines of at most ``width`` characters, never inside an item;
    the last item ends with ``end``."""
    lines, line = [], ""
    for i, item in enumerate(items):
        item += end if i == len(items) - 1 else ","
        if line and len(line) + 1 + len(item) > width:
            lines.append(line)
            line = item
        else:
            line = f"{line} {item}" if line else item
    return lines + ([line] if line else [])


def _dumps(value: Any, indent: int = 0) -> str:
    """JSON with objects and lists of lists indented, lists of numbers on one line."""
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {_dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and isinstance(value[0], (list, dict, str)):
        return "[\n" + ",\n".join(inner + _dumps(v, indent + 1) for v in value) + "\n" + pad + "]"
    return json.dumps(value, separators=(",", ":"))


def write(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_dumps(results) + "\n", encoding="utf-8")
