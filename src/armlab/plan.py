"""Turn a validated config into plugin objects, checking every plugin's own parameters.

All problems are collected and reported together, each naming its field, so one run of
``armlab validate`` explains everything that is wrong: :func:`load_experiment` reports the
file's schema mistakes and its plugin tables' parameter mistakes in one message, and
:func:`build_plans` builds (and dry-runs) the plan of every ``[sweep]`` value, as a run does.
:func:`check_memory` refuses, before anything runs, a simulation whose per-replica arrays
cannot fit in this machine's memory.  A plan describes one bandit (from ``[source]``) or
several (from ``[[bandits]]``, sharing the budget; see :mod:`armlab.multibandit`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from armlab.adapters.base import LiveSource
from armlab.config import (
    BanditEntry,
    ExperimentConfig,
    InvalidExperiment,
    PluginEntry,
    PolicyEntry,
    config_problems,
    format_validation_error,
    read_config_data,
)
from armlab.errors import ArmlabError, ConfigError, PluginError
from armlab.live_rules import refuse_ignored_live_fields
from armlab.multibandit import BanditProblem
from armlab.plugins.interfaces import Allocator, PluginParams, Policy, RewardSource
from armlab.plugins.registry import Registry
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom

__all__ = [
    "BanditSpec",
    "ExperimentPlan",
    "PolicySpec",
    "build_plan",
    "build_plans",
    "check_memory",
    "load_experiment",
    "memory_needed",
]


@dataclass(frozen=True)
class PolicySpec:
    """One compared policy: its label, class and validated parameters, and its own
    allocator when the entry overrides ``[allocator]`` (``None``: the experiment's)."""

    label: str
    plugin: str
    cls: type[Policy]
    params: PluginParams
    allocator_cls: type[Allocator] | None = None
    allocator_params: PluginParams | None = None

    def create(self) -> Policy:
        return self.cls(self.params)


@dataclass(frozen=True)
class BanditSpec:
    """One bandit: label, source class and validated parameters, objective and target arm."""

    label: str
    source_cls: type
    source_params: PluginParams
    objective: Objective
    top_m: int
    target_arm: int | None = None

    def create_source(self) -> RewardSource | LiveSource:
        return self.source_cls(self.source_params)


@dataclass(frozen=True)
class ExperimentPlan:
    """Everything needed to run an experiment, validated."""

    config: ExperimentConfig
    bandits: list[BanditSpec]
    policies: list[PolicySpec]
    allocator_cls: type[Allocator]
    allocator_params: PluginParams
    registry: Registry = field(compare=False, repr=False)  # the plugins that built it (observers)
    arm_counts: tuple[int, ...] = ()  # arms of each simulated bandit, known after the dry run

    @property
    def multi_bandit(self) -> bool:
        """True for a ``[[bandits]]`` experiment (even with a single entry)."""
        return self.config.bandits is not None

    @property
    def source_cls(self) -> type:
        """Source class of the first (in one-source experiments: the only) bandit."""
        return self.bandits[0].source_cls

    @property
    def source_params(self) -> PluginParams:
        return self.bandits[0].source_params

    @property
    def live(self) -> bool:
        return issubclass(self.source_cls, LiveSource)

    def create_source(self, bandit: int = 0) -> RewardSource | LiveSource:
        return self.bandits[bandit].create_source()

    def create_allocator(self, spec: PolicySpec | None = None) -> Allocator:
        """The allocator of policy ``spec`` (its own, or the experiment's ``[allocator]``)."""
        if spec is not None and spec.allocator_cls is not None:
            return spec.allocator_cls(spec.allocator_params)
        return self.allocator_cls(self.allocator_params)

    def problem(self, source: RewardSource | LiveSource, truth: Truth | None, bandit: int = 0) -> Problem:
        """The problem the policies of bandit ``bandit`` see for ``source`` (with ``truth``
        when simulated); a :class:`~armlab.multibandit.BanditProblem` in multi-bandit plans."""
        p = self.config.problem
        spec = self.bandits[bandit]
        fields = dict(
            objective=spec.objective,
            budget=p.budget,
            n_arms=source.n_arms,
            top_m=spec.top_m,
            epsilon=p.epsilon,
            threshold=p.threshold,
            delta=p.delta,
            truth=truth,
            source=source.name,
            reward_range=source.reward_range,
        )
        if self.multi_bandit:
            return BanditProblem(**fields, target_arm=spec.target_arm)
        return Problem(**fields)


def _validate_params(
    registry: Registry, kind: str, entry: PluginEntry, where: str, errors: list[str]
) -> tuple[type | None, PluginParams | None]:
    try:
        cls = registry.get(kind, entry.plugin)
    except PluginError as exc:
        errors.append(f"{where}.plugin: {exc}")
        return None, None
    try:
        return cls, cls.Params.model_validate(entry.params)
    except ValidationError as exc:
        accepted = ", ".join(cls.Params.model_fields) or "no parameters"
        for line in format_validation_error(exc, prefix=where, model=cls.Params):
            errors.append(f"{line} ({entry.plugin} accepts: {accepted})" if ": unknown field" in line else line)
        return cls, None


def build_plan(config: ExperimentConfig, registry: Registry, dry_run: bool = True) -> ExperimentPlan:
    """Resolve plugins and parameters; with ``dry_run`` also reset every policy on one
    replica so budget, objective and oracle requirements are checked before a long run."""
    errors: list[str] = []
    bandits = _bandit_specs(config, registry, errors)
    allocator_cls, allocator_params = _validate_params(
        registry, "allocator", config.allocator, "allocator", errors
    )
    objectives = sorted({b.objective for b in bandits}, key=lambda o: o.value)
    specs = []
    for i, entry in enumerate(config.policies):
        where = f"policies[{i}]"
        cls, params = _validate_params(registry, "policy", entry, where, errors)
        own_cls, own_params = None, None
        if entry.allocator is not None:
            own_cls, own_params = _validate_params(
                registry, "allocator", entry.allocator, f"{where}.allocator", errors
            )
        if cls is None or params is None:
            continue
        unserved = [o for o in objectives if o not in cls.objectives]
        if unserved:
            served = ", ".join(sorted(o.value for o in cls.objectives))
            errors.append(
                f"{where}.plugin: {entry.plugin!r} does not serve objective {unserved[0].value!r} "
                f"(it serves: {served}); change [problem] objective or remove this policy"
            )
            continue
        specs.append(PolicySpec(entry.display_label, entry.plugin, cls, params, own_cls, own_params))
    if errors:
        raise InvalidExperiment(errors)
    plan = ExperimentPlan(config, bandits, specs, allocator_cls, allocator_params, registry)
    _check_live_bandits(plan)
    if dry_run:
        plan = dataclasses.replace(plan, arm_counts=_dry_run(plan))
    refuse_ignored_live_fields(config, plan.live)
    return plan


def build_plans(config: ExperimentConfig, registry: Registry) -> list[tuple[Any, ExperimentPlan]]:
    """``(sweep value, plan)`` for every run of ``config``, each built and dry-run as
    :func:`build_plan` does, so a value that would fail at run time fails here.

    Every value's problems are reported together, one line per problem with the values
    that have it.
    """
    if config.sweep is None:
        return [(None, build_plan(config, registry))]
    plans, problems = [], {}  # problem line -> the values (repr) that have it
    for value, variant in config.variants():
        try:
            plans.append((value, build_plan(variant, registry)))
        except ConfigError as exc:
            for line in exc.problems if isinstance(exc, InvalidExperiment) else [str(exc)]:
                problems.setdefault(line, []).append(repr(value))
    if not problems:
        return plans
    parameter = config.sweep.parameter
    raise InvalidExperiment([
        f"sweep value {parameter} = {values[0]} gives an invalid experiment: {line}" if len(values) == 1
        else f"sweep values {parameter} = {', '.join(values)} give an invalid experiment: {line}"
        for line, values in problems.items()
    ])


def load_experiment(path: str | Path, registry: Registry) -> ExperimentConfig:
    """Read and validate an experiment file.  When its tables are invalid, the parameters of
    its plugin tables are checked too, so one report lists both kinds of mistake."""
    data = read_config_data(path)
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        problems = config_problems(exc, data)
        for kind, where, table in _plugin_tables(data):
            entry_type = PolicyEntry if kind == "policy" else PluginEntry
            try:
                entry = entry_type.model_validate(table)
            except ValidationError:
                continue  # the schema's own report names the table
            _validate_params(registry, kind, entry, where, problems)
        raise ConfigError(f"{path}: {InvalidExperiment(problems)}") from None


def _plugin_tables(data: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """``(kind, field path, table)`` of every plugin table in a parsed experiment file."""

    def listed(value: Any) -> list[Any]:
        return value if isinstance(value, list) else []

    if "bandits" not in data and "source" in data:
        yield "source", "source", data["source"]
    for i, bandit in enumerate(listed(data.get("bandits"))):
        if isinstance(bandit, dict) and "source" in bandit:
            yield "source", f"bandits[{i}].source", bandit["source"]
    if "allocator" in data:
        yield "allocator", "allocator", data["allocator"]
    for i, policy in enumerate(listed(data.get("policies"))):
        yield "policy", f"policies[{i}]", policy
        if isinstance(policy, dict) and "allocator" in policy:
            yield "allocator", f"policies[{i}].allocator", policy["allocator"]


def _check_live_bandits(plan: ExperimentPlan) -> None:
    """Several bandits run live only when every source is live and runs trials the same way."""
    if not plan.multi_bandit:
        return
    live = [issubclass(b.source_cls, LiveSource) for b in plan.bandits]
    if any(live) and not all(live):
        names = ", ".join(b.label for b, on in zip(plan.bandits, live, strict=True) if on)
        raise InvalidExperiment([
            f"bandits: every bandit's source must be live, or none: {names} live, the others simulated"
        ])
    if all(live):
        runs = {b.source_cls.runs_trials for b in plan.bandits}
        if len(runs) > 1:
            raise InvalidExperiment([(
                "bandits: the live sources must all run their own trials "
                "(callback, command, webhook) or all be 'external' (trials handed out by `armlab serve`)"
            )])


def _bandit_specs(config: ExperimentConfig, registry: Registry, errors: list[str]) -> list[BanditSpec]:
    """One spec per bandit; parameters are validated once per ``[[bandits]]`` entry."""
    if config.bandits is None:
        entries: list[tuple[str, BanditEntry]] = [("source", BanditEntry(source=config.source))]
    else:
        entries = [(f"bandits[{i}].source", entry) for i, entry in enumerate(config.bandits)]
    resolved = iter(config.bandit_list())
    specs = []
    for where, entry in entries:
        cls, params = _validate_params(registry, "source", entry.source, where, errors)
        for _ in range(entry.count):
            bandit = next(resolved)
            if cls is not None and params is not None:
                assert bandit.label is not None and bandit.objective is not None
                specs.append(BanditSpec(bandit.label, cls, params, bandit.objective, bandit.m or 1, bandit.target_arm))
    return specs


def _dry_run(plan: ExperimentPlan) -> tuple[int, ...]:
    """Start every policy and allocator on one replica; return the arm count of each
    simulated bandit."""
    errors: list[str] = []
    one = KeyedRandom(plan.config.seed, "dry-run", replicas=np.array([0]))
    problems = []
    arm_counts = []
    for b, bandit in enumerate(plan.bandits):
        source = bandit.create_source()
        truth = None
        if isinstance(source, RewardSource):
            source.reset(np.array([0]), plan.config.seed, b)
            truth = source.truth
            arm_counts.append(source.n_arms)
            _check_bandit_against_source(plan, bandit, source.n_arms, errors)
        problems.append(plan.problem(source, truth, b))
    for i, spec in enumerate(plan.policies):
        for problem, bandit in zip(problems, plan.bandits, strict=True):
            try:
                spec.create().reset(problem, 1, one)
            except ArmlabError as exc:
                where = f" on bandit {bandit.label!r}" if plan.multi_bandit else ""
                errors.append(f"policies[{i}] ({spec.label}){where}: {exc}")
                break  # the same mistake on every bandit: report it once
    used = {}  # the allocators some policy runs with, by config field
    for i, spec in enumerate(plan.policies):
        where = "allocator" if spec.allocator_cls is None else f"policies[{i}].allocator"
        used.setdefault(where, plan.create_allocator(spec))
    for where, allocator in used.items():
        try:
            allocator.reset(problems, 1, one)
        except ArmlabError as exc:
            errors.append(f"{where}: {exc}")
    if errors:
        raise InvalidExperiment(errors)
    return tuple(arm_counts)


def _check_bandit_against_source(plan: ExperimentPlan, bandit: BanditSpec, n_arms: int, errors: list[str]) -> None:
    where = f"bandit {bandit.label!r}: " if plan.multi_bandit else "problem."
    m = plan.config.problem.m if not plan.multi_bandit else bandit.top_m
    if bandit.objective is Objective.TOP_M or plan.config.problem.m is not None:
        if m is not None and m >= n_arms:
            errors.append(f"{where}m: m = {m} must be smaller than the number of arms ({n_arms})")
    if bandit.target_arm is not None and bandit.target_arm >= n_arms:
        errors.append(
            f"{where}target_arm: target_arm = {bandit.target_arm} is not an arm of its source "
            f"({n_arms} arms, numbered from 0)"
        )


#: Peak bytes a running simulation holds per replica and arm: the framework's statistics
#: (33 bytes) plus the source's and the policy's own arrays.  The built-in policies peak at
#: 65 to 240 bytes (tracemalloc, 8 and 64 arms), so the estimate takes the high end.
BYTES_PER_ARM = 240
#: Bytes per replica and slot of the ledger that holds delayed results.
BYTES_PER_PENDING = 33


def memory_needed(plans: Sequence[ExperimentPlan], at_once: int) -> int:
    """Estimated peak bytes of the simulated runs ``plans`` with ``at_once`` replicas being
    simulated at the same time (over every process): their per-replica arrays (statistics,
    policy and source state, pending results, checkpoint metrics) plus the checkpoint
    metrics of every policy and run, which are kept until the summary is written.
    ``plans`` must come from :func:`build_plan` with its dry run (it counts the arms)."""
    per_replica = max(sum(plan.arm_counts) * BYTES_PER_ARM + _pending_bytes(plan) + _kept_bytes(plan)
                      for plan in plans)
    kept = sum(len(plan.policies) * plan.config.replicas * _kept_bytes(plan) for plan in plans)
    return at_once * per_replica + kept


def _pending_bytes(plan: ExperimentPlan) -> int:
    feedback = plan.config.feedback
    return 0 if feedback.longest_delay == 0 else feedback.effective_in_flight * BYTES_PER_PENDING


def _kept_bytes(plan: ExperimentPlan) -> int:
    """Bytes per replica of one policy's results: error and regret per checkpoint, stop time."""
    return (2 * len(plan.config.checkpoint_list()) + 1) * 8


def check_memory(
    plans: Sequence[ExperimentPlan],
    *,
    workers: int = 1,
    block: int | None = None,
    remote: bool = False,
    available: int | None = None,
) -> None:
    """Refuse simulated runs whose estimated memory (:func:`memory_needed`) exceeds
    ``available`` (default: this machine's memory, or this process's cgroup limit).

    ``workers`` processes run the policies (and blocks of ``block`` replicas) side by side;
    ``remote``: they run elsewhere (a Dask scheduler), and only the merged results stay here.
    The message gives the estimate and the fixes: fewer replicas, or smaller blocks.
    """
    simulated = [plan for plan in plans if not plan.live]
    limit = available if available is not None else available_memory()
    if not simulated or limit is None:
        return
    replicas = simulated[0].config.replicas
    units = sum(len(plan.policies) for plan in simulated)  # tasks when no run is split
    if remote:
        at_once = 0
    elif block is None:
        at_once = replicas * min(workers, units)
    else:
        at_once = min(block, replicas) * min(workers, units * math.ceil(replicas / block))
    needed = memory_needed(simulated, at_once)
    if needed <= limit:
        return
    kept = memory_needed(simulated, 0)
    arms = max(sum(plan.arm_counts) for plan in simulated)
    fit = max(1, replicas * limit // needed)
    fixes = f"lower replicas (--replicas; about {fit} fit)"
    if kept < limit and not remote:
        per_replica = (memory_needed(simulated, 1) - kept) * min(workers, units)
        fixes += (f", or simulate blocks of at most {max(1, (limit - kept) // per_replica)} replicas "
                  f"(--shard-size; --workers runs that many blocks side by side)")
    raise ConfigError(
        f"replicas: {replicas} replicas need about {_size(needed)} of memory ({arms} arms x about "
        f"{BYTES_PER_ARM} bytes per replica and arm while a policy runs, plus every policy's results), "
        f"more than the {_size(limit)} here: {fixes}"
    )


def available_memory() -> int | None:
    """This machine's physical memory, or this process's cgroup limit when lower (``None``
    where the platform does not say)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def _size(n: int) -> str:
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
