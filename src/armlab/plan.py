"""Turn a validated config into plugin objects, checking every plugin's own parameters.

All problems are collected and reported together, each naming its field, so one run of
``armlab validate`` explains everything that is wrong: :func:`load_experiment` reports the
file's schema mistakes and its plugin tables' parameter mistakes in one message, and
:func:`build_plans` builds (and dry-runs) the plan of every ``[sweep]`` value, as a run does.
(:mod:`armlab.memory_estimate` then refuses a simulation that cannot fit in memory.)  A plan describes one bandit (from ``[source]``) or
several (from ``[[bandits]]``, sharing the budget; see :mod:`armlab.multibandit`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
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
from armlab.config_paths import PathBase, path_context
from armlab.errors import ArmlabError, ConfigError, PluginError
from armlab.live_rules import refuse_ignored_live_fields, refuse_unusable_safeguards
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
    "load_experiment",
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
    registry: Registry, kind: str, entry: PluginEntry, where: str, errors: list[str], base: PathBase
) -> tuple[type | None, PluginParams | None]:
    """The plugin class and validated parameters of ``entry`` (``None`` where they are
    wrong: ``errors`` says why); relative paths in them resolve against ``base``."""
    try:
        cls = registry.get(kind, entry.plugin)
    except PluginError as exc:
        errors.append(f"{where}.plugin: {exc}")
        return None, None
    try:
        return cls, cls.Params.model_validate(entry.params, context=path_context(base))
    except ValidationError as exc:
        accepted = ", ".join(cls.Params.model_fields) or "no parameters"
        for line in format_validation_error(exc, prefix=where, model=cls.Params):
            errors.append(f"{line} ({entry.plugin} accepts: {accepted})" if ": unknown field" in line else line)
        return cls, None


def build_plan(config: ExperimentConfig, registry: Registry, dry_run: bool = True) -> ExperimentPlan:
    """Resolve plugins and parameters; with ``dry_run`` also reset every policy on one
    replica so budget, objective and oracle requirements are checked before a long run."""
    errors: list[str] = []
    base = config.path_base
    bandits = _bandit_specs(config, registry, errors, base)
    allocator_cls, allocator_params = _validate_params(
        registry, "allocator", config.allocator, "allocator", errors, base
    )
    objectives = sorted({b.objective for b in bandits}, key=lambda o: o.value)
    specs = []
    for i, entry in enumerate(config.policies):
        where = f"policies[{i}]"
        cls, params = _validate_params(registry, "policy", entry, where, errors, base)
        own_cls, own_params = None, None
        if entry.allocator is not None:
            own_cls, own_params = _validate_params(
                registry, "allocator", entry.allocator, f"{where}.allocator", errors, base
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
    if plan.live and (config.guardrails or config.stopping is not None):
        refuse_unusable_safeguards(config, [(spec.label, spec.cls) for spec in specs],
                                   [bandit.create_source().reward_range for bandit in bandits])
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
    """Read and validate an experiment file (its relative paths resolve against its directory).
    When its tables are invalid, the parameters of its plugin tables are checked too, so one
    report lists both kinds of mistake."""
    return experiment_from_data(read_config_data(path), PathBase.of_file(path), registry, str(path))


def experiment_from_data(data: dict[str, Any], base: PathBase, registry: Registry, where: str) -> ExperimentConfig:
    """Validate parsed experiment tables as :func:`load_experiment` validates a file (relative
    paths resolve against ``base``); the ConfigError names ``where`` and lists every problem."""
    try:
        return ExperimentConfig.model_validate(data).located(base.directory)
    except ValidationError as exc:
        problems = config_problems(exc, data)
        for kind, field, table in _plugin_tables(data):
            entry_type = PolicyEntry if kind == "policy" else PluginEntry
            try:
                entry = entry_type.model_validate(table)
            except ValidationError:
                continue  # the schema's own report names the table
            _validate_params(registry, kind, entry, field, problems, base)
        raise ConfigError(f"{where}: {InvalidExperiment(problems)}") from None


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


def _bandit_specs(
    config: ExperimentConfig, registry: Registry, errors: list[str], base: PathBase
) -> list[BanditSpec]:
    """One spec per bandit; parameters are validated once per ``[[bandits]]`` entry."""
    if config.bandits is None:
        entries: list[tuple[str, BanditEntry]] = [("source", BanditEntry(source=config.source))]
    else:
        entries = [(f"bandits[{i}].source", entry) for i, entry in enumerate(config.bandits)]
    resolved = iter(config.bandit_list())
    specs = []
    for where, entry in entries:
        cls, params = _validate_params(registry, "source", entry.source, where, errors, base)
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
