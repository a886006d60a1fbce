"""``armlab validate CONFIG``: check an experiment file and explain every error."""

from __future__ import annotations

import click

from armlab.cli.app import App
from armlab.cli.errors import user_errors
from armlab.cli.time_estimate import estimate_seconds, format_duration
from armlab.memory_estimate import check_memory
from armlab.config import ExperimentConfig
from armlab.plan import ExperimentPlan, build_plans, load_experiment
from armlab.plugins.registry import Registry

__all__ = ["checked_plans", "validate_command"]


def checked_plans(config: ExperimentConfig, registry: Registry) -> list[tuple[object, ExperimentPlan]]:
    """The checks of ``armlab validate`` after the fields (every sweep value's plan built and
    dry-run, the replicas' memory): ``(sweep value, plan)`` pairs, or a ConfigError listing
    every problem.  ``armlab server`` checks a new experiment's config with it too."""
    plans = build_plans(config, registry)
    check_memory([plan for _, plan in plans])
    return plans


@click.command("validate")
@click.argument("config_path", metavar="CONFIG.toml", type=click.Path(dir_okay=False))
@click.pass_obj
def validate_command(app: App, config_path: str) -> None:
    """Check CONFIG.toml: fields, plugin names and parameters, that every policy can start on
    the problem (budget large enough, oracle inputs available) for every sweep value, and
    that the replicas fit in memory when run in one process; then estimate how long a
    simulated run takes, from a short probe of each policy."""
    with user_errors():
        config = load_experiment(config_path, app.registry)
        plans = checked_plans(config, app.registry)
        seconds = estimate_seconds([plan for _, plan in plans])
    labels = ", ".join(p.label for p in plans[0][1].policies)
    click.echo(
        f"{config_path}: OK ({config.problem.objective.value}, budget {config.problem.budget}, "
        f"{config.replicas} replicas, source {config.source.plugin}, policies: {labels})"
    )
    if seconds is not None:
        click.echo(f"estimated time: {format_duration(seconds)} in one process "
                   f"(from a probe of each policy; --workers N shares it among N processes)")
