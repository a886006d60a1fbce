"""Fields a live experiment cannot honour, refused instead of silently ignored (and the
live-only fields, ``exploration_floor``, ``[[guardrails]]`` and ``[stopping]``, refused for a
Monte Carlo run).

A live run is one sequence of real trials: there is no second replica to run and no second
configuration to sweep over, so ``replicas`` (other than 1) and ``[sweep]`` would change
nothing.  They are refused with the field's name and the fix, and so is a replica count
given beside the config (``--replicas``, ``run_experiment(replicas=...)``).  ``replicas`` left
out is accepted: it was never asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from armlab.config import ExperimentConfig
from armlab.errors import ConfigError, PluginError
from armlab.plugins.interfaces import Policy
from armlab.plugins.registry import Registry

__all__ = ["has_live_source", "refuse_ignored_live_fields", "refuse_unusable_safeguards"]

#: ``replicas`` when the config does not set it (a live config need not mention it).
_DEFAULT_REPLICAS = ExperimentConfig.model_fields["replicas"].default
_EVERY_FIELD = frozenset(ExperimentConfig.model_fields)


def has_live_source(config: ExperimentConfig, registry: Registry) -> bool:
    """Whether ``config``'s (first) source plugin is live; ``False`` for an unknown plugin
    (building the plan reports that)."""
    try:
        source = registry.get("source", config.bandit_list()[0].source.plugin)
    except PluginError:
        return False
    return source.live


def _asks_for_replicas(config: ExperimentConfig) -> bool:
    """Whether ``config`` sets ``replicas`` (pydantic's ``model_fields_set``).

    A config re-validated from a full dump of another (:meth:`ExperimentConfig.with_overrides`,
    a journal's stored config) has every field marked as set, which tells nothing: there
    only a value other than the default counts as asked for (the config it came from was
    checked where it was loaded).
    """
    fields = config.model_fields_set
    if fields >= _EVERY_FIELD:
        return config.replicas != _DEFAULT_REPLICAS
    return "replicas" in fields


def refuse_ignored_live_fields(
    config: ExperimentConfig, live: bool, *, replicas: int | None = None, option: str = "--replicas"
) -> None:
    """Raise :class:`~armlab.errors.ConfigError` when ``live`` and ``config`` asks for more
    than one replica or has a ``[sweep]`` (check the whole experiment's config: the config of
    one of its runs no longer holds the sweep), or when ``replicas``, a count given beside
    the config and named ``option`` in the message, is not 1."""
    if not live:
        if config.exploration_floor:
            raise ConfigError(
                f"exploration_floor: a Monte Carlo run has no log to evaluate offline, so exploration_floor = "
                f"{config.exploration_floor} would only change the policy under study: remove it (it applies "
                "to live sources)"
            )
        if config.guardrails or config.stopping is not None:
            table = "guardrails" if config.guardrails else "stopping"
            raise ConfigError(
                f"{table}: the safeguards watch live experiments (docs/safeguards.md); a Monte Carlo run "
                f"compares policies under a fixed budget, so [{table}] would change nothing: remove it"
            )
        return
    sweep = config.sweep
    if sweep is not None:
        raise ConfigError(
            f"sweep: a live experiment runs one sequence of real trials, so [sweep] ({sweep.parameter} = "
            f"{sweep.values!r}) would be ignored: remove the [sweep] table and run one config per value"
        )
    if replicas is not None and replicas != 1:
        raise ConfigError(
            f"{option}: a live experiment is one replica of real trials, so {replicas} replicas would be "
            f"ignored: drop {option}"
        )
    if config.replicas != 1 and _asks_for_replicas(config):
        raise ConfigError(
            f"replicas: a live experiment is one replica of real trials, so replicas = {config.replicas} "
            "would be ignored: set replicas = 1 or remove it"
        )


def refuse_unusable_safeguards(
    config: ExperimentConfig, policies: Sequence[tuple[str, type[Policy]]], reward_ranges: Sequence[tuple[float, float]]
) -> None:
    """Raise :class:`~armlab.errors.ConfigError` when a live experiment's safeguards cannot work.

    ``[[guardrails]]`` retire arms, which only policies that skip inactive arms honour
    (``policies``: label and class of each); ``[stopping] rule = "anytime"`` needs every
    bandit's source to declare a finite reward range (``reward_ranges``, one per bandit):
    its confidence sequences are built for values in that range.
    """
    if config.guardrails:
        cannot = [label for label, cls in policies if not cls.honours_inactive_arms]
        if cannot:
            raise ConfigError(
                f"guardrails: policy {cannot[0]!r} cannot retire arms (its rule may still pick an inactive arm), "
                "so a guardrail could not act; use a policy that can (ucb1, thompson, klucb, eucbv, gape, apt, "
                "uniform) or remove [[guardrails]]"
            )
    if config.stopping is not None:
        for bandit, (low, high) in enumerate(reward_ranges):
            if not (math.isfinite(low) and math.isfinite(high)):
                where = "source" if len(reward_ranges) == 1 else f"bandits[{bandit}].source"
                raise ConfigError(
                    f"stopping: rule = \"anytime\" needs rewards in a known range, but {where} declares "
                    f"[{low}, {high}]; declare the source's reward range (reward_min and reward_max) "
                    "or remove [stopping]"
                )
