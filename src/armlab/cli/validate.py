"""``armlab validate CONFIG``: check an experiment file and explain every error."""

from __future__ import annotations

import click

from armlab.cli.app import App
from armlab.cli.errors import user_errors
from armlab.config import load_config
from armlab.plan import build_plan


@click.command("validate")
@click.argument("config_path", metavar="CONFIG.toml", type=click.Path(dir_okay=False))
@click.pass_obj
def validate_command(app: App, config_path: str) -> None:
    """Check CONFIG.toml: fields, plugin names and parameters, and that every policy can
    start on the problem (budget large enough, oracle inputs available)."""
    with user_errors():
        config = load_config(config_path)
        plan = build_plan(config, app.registry)
    labels = ", ".join(p.label for p in plan.policies)
    click.echo(
        f"{config_path}: OK ({config.problem.objective.value}, budget {config.problem.budget}, "
        f"{config.replicas} replicas, source {config.source.plugin}, policies: {labels})"
    )
