"""Fields a live experiment cannot honour, refused instead of silently ignored (and the one
live-only field, ``exploration_floor``, refused for a Monte Carlo run).

A live run is one sequence of real trials: there is no second replica to run and no second
configuration to sweep over, so ``replicas`` (other than 1) and ``[sweep]`` would change
nothing.  They are refused with the field's name and the fix, and so is a replica count
given beside the config (``--replicas``, ``run_experiment(replicas=...)``).  ``replicas`` left
out is accepted: it was never asked for.
"""

from __future__ import annotations

from armlab.config import ExperimentConfig
from armlab.errors import ConfigError, PluginError
from armlab.plugins.registry import Registry

__all__ = ["has_live_source", "refuse_ignored_live_fields"]

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
