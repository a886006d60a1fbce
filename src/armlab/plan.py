"""Turn a validated config into plugin objects, checking every plugin's own parameters.

All problems are collected and reported together, each naming its field, so one run of
``armlab validate`` explains everything that is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from armlab.adapters.base import LiveSource
from armlab.config import ExperimentConfig, PluginEntry, format_validation_error
from armlab.errors import ArmlabError, ConfigError, PluginError
from armlab.plugins.interfaces import Allocator, PluginParams, Policy, RewardSource
from armlab.plugins.registry import Registry
from armlab.problem import Problem, Truth
from armlab.random import KeyedRandom

__all__ = ["ExperimentPlan", "PolicySpec", "build_plan"]


@dataclass(frozen=True)
class PolicySpec:
    """One compared policy: its label, class and validated parameters."""

    label: str
    plugin: str
    cls: type[Policy]
    params: PluginParams

    def create(self) -> Policy:
        return self.cls(self.params)


@dataclass(frozen=True)
class ExperimentPlan:
    """Everything needed to run an experiment, validated."""

    config: ExperimentConfig
    source_cls: type
    source_params: PluginParams
    policies: list[PolicySpec]
    allocator_cls: type[Allocator]
    allocator_params: PluginParams

    @property
    def live(self) -> bool:
        return issubclass(self.source_cls, LiveSource)

    def create_source(self) -> RewardSource | LiveSource:
        return self.source_cls(self.source_params)

    def create_allocator(self) -> Allocator:
        return self.allocator_cls(self.allocator_params)

    def problem(self, source: RewardSource | LiveSource, truth: Truth | None) -> Problem:
        """The problem the policies see for ``source`` (with ``truth`` when simulated)."""
        p = self.config.problem
        return Problem(
            objective=p.objective,
            budget=p.budget,
            n_arms=source.n_arms,
            top_m=p.m or 1,
            epsilon=p.epsilon,
            threshold=p.threshold,
            delta=p.delta,
            truth=truth,
            source=source.name,
            reward_range=source.reward_range,
        )


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
        for line in format_validation_error(exc, prefix=where):
            errors.append(f"{line} ({entry.plugin} accepts: {accepted})")
        return cls, None


def build_plan(config: ExperimentConfig, registry: Registry, dry_run: bool = True) -> ExperimentPlan:
    """Resolve plugins and parameters; with ``dry_run`` also reset every policy on one
    replica so budget, objective and oracle requirements are checked before a long run."""
    errors: list[str] = []
    source_cls, source_params = _validate_params(registry, "source", config.source, "source", errors)
    allocator_cls, allocator_params = _validate_params(
        registry, "allocator", config.allocator, "allocator", errors
    )
    specs = []
    objective = config.problem.objective
    for i, entry in enumerate(config.policies):
        where = f"policies[{i}]"
        cls, params = _validate_params(registry, "policy", entry, where, errors)
        if cls is None or params is None:
            continue
        if objective not in cls.objectives:
            served = ", ".join(sorted(o.value for o in cls.objectives))
            errors.append(
                f"{where}.plugin: {entry.plugin!r} does not serve objective {objective.value!r} "
                f"(it serves: {served}); change [problem] objective or remove this policy"
            )
            continue
        specs.append(PolicySpec(entry.display_label, entry.plugin, cls, params))
    if errors:
        raise ConfigError("invalid experiment:\n  " + "\n  ".join(errors))
    plan = ExperimentPlan(config, source_cls, source_params, specs, allocator_cls, allocator_params)
    if dry_run:
        _dry_run(plan)
    return plan


def _dry_run(plan: ExperimentPlan) -> None:
    errors: list[str] = []
    source = plan.create_source()
    truth = None
    if isinstance(source, RewardSource):
        source.reset(np.array([0]), plan.config.seed)
        truth = source.truth
        _check_problem_against_truth(plan, source, errors)
    problem = plan.problem(source, truth)
    one = KeyedRandom(plan.config.seed, "dry-run", replicas=np.array([0]))
    for i, spec in enumerate(plan.policies):
        try:
            spec.create().reset(problem, 1, one)
        except ArmlabError as exc:
            errors.append(f"policies[{i}] ({spec.label}): {exc}")
    try:
        plan.create_allocator().reset([problem], 1, one)
    except ArmlabError as exc:
        errors.append(f"allocator: {exc}")
    if errors:
        raise ConfigError("invalid experiment:\n  " + "\n  ".join(errors))


def _check_problem_against_truth(plan: ExperimentPlan, source: Any, errors: list[str]) -> None:
    m = plan.config.problem.m
    if m is not None and m >= source.n_arms:
        errors.append(f"problem.m: m = {m} must be smaller than the number of arms ({source.n_arms})")
