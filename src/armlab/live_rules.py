"""Fields a live experiment cannot honour, refused instead of silently ignored.

A live run is one sequence of real trials: there is no second replica to run and no second
configuration to sweep over, so ``replicas`` (other than 1) and ``[sweep]`` would change
nothing.  They are refused with the field's name and the fix.  ``replicas`` left at its
default is accepted: it was never asked for.
"""

from __future__ import annotations

from armlab.config import ExperimentConfig
from armlab.errors import ConfigError

__all__ = ["refuse_ignored_live_fields"]

#: ``replicas`` when the config does not set it (a live config need not mention it).
_DEFAULT_REPLICAS = ExperimentConfig.model_fields["replicas"].default


def refuse_ignored_live_fields(config: ExperimentConfig, live: bool) -> None:
    """Raise :class:`~armlab.errors.ConfigError` when ``live`` and ``config`` asks for more
    than one replica or has a ``[sweep]`` (check the whole experiment's config: the config of
    one of its runs no longer holds the sweep)."""
    if not live:
        return
    sweep = config.sweep
    if sweep is not None:
        raise ConfigError(
            f"sweep: a live experiment runs one sequence of real trials, so [sweep] ({sweep.parameter} = "
            f"{sweep.values!r}) would be ignored: remove the [sweep] table and run one config per value"
        )
    if config.replicas not in (1, _DEFAULT_REPLICAS):
        raise ConfigError(
            f"replicas: a live experiment is one replica of real trials, so replicas = {config.replicas} "
            "would be ignored: set replicas = 1 or remove it (and drop --replicas)"
        )
