"""The ``armlab`` command line: a click group whose commands live one per module."""

from __future__ import annotations

import sys

import click

from armlab import __version__
from armlab.cli.app import App
from armlab.cli.plugins import plugins_command
from armlab.cli.run import run_command
from armlab.cli.validate import validate_command
from armlab.errors import ArmlabError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="armlab")
@click.option(
    "--no-plugins",
    is_flag=True,
    envvar="ARMLAB_DISABLE_PLUGIN_AUTOLOAD",
    show_envvar=True,
    help="Do not load third-party plugins (entry-point group 'armlab').",
)
@click.pass_context
def cli(ctx: click.Context, no_plugins: bool) -> None:
    """armlab: run bandit experiments, simulated or live."""
    ctx.obj = App(load_entrypoints=not no_plugins)


cli.add_command(run_command)
cli.add_command(plugins_command)
cli.add_command(validate_command)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: plugin commands, then clean errors (exit 2) for user mistakes."""
    try:
        App(load_entrypoints=None).registry.pm.hook.armlab_register_commands(cli=cli)
    except ArmlabError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    cli.main(args=argv, prog_name="armlab")
