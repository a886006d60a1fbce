"""The ``armlab`` command line: a click group whose commands live one per module."""

from __future__ import annotations

import functools

import click

from armlab._version import __version__
from armlab.cli.app import App
from armlab.cli.errors import user_errors
from armlab.cli.compare import compare_command, report_command
from armlab.cli.experiments import experiments_command
from armlab.cli.evaluate import evaluate_command
from armlab.cli.export import export_command
from armlab.cli.plugins import plugins_command
from armlab.cli.run import run_command
from armlab.cli.storage import storage_group
from armlab.cli.validate import validate_command
from armlab.orchestrator.montecarlo.scale.heap import apply_heap_setting
from armlab.plugins.registry import Registry, default_registry

__all__ = ["cli", "main"]


class ArmlabGroup(click.Group):
    """The root group: its own commands plus those of the plugins that ``--no-plugins`` (or
    ``ARMLAB_DISABLE_PLUGIN_AUTOLOAD=1``) lets load."""

    def _all_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        # click parses the group's options before it resolves a sub-command; only another eager
        # option (--help) can ask for the commands before --no-plugins is read: then the
        # environment decides (None)
        no_plugins = ctx.params.get("no_plugins") if ctx is not None else None
        with user_errors():
            registry = default_registry(None if no_plugins is None else not no_plugins)
            return {**self.commands, **plugin_commands(registry)}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._all_commands(ctx))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._all_commands(ctx).get(cmd_name)


@functools.cache
def plugin_commands(registry: Registry) -> dict[str, click.Command]:
    """The commands ``registry``'s plugins add through ``armlab_register_commands``, collected
    once per registry in a group of their own, so the root group never keeps the commands of
    plugins a later invocation (``--no-plugins``) leaves out."""
    group = click.Group()
    registry.pm.hook.armlab_register_commands(cli=group)
    return group.commands


@click.group(cls=ArmlabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="armlab")
@click.option(
    "--no-plugins",
    is_flag=True,
    is_eager=True,
    envvar="ARMLAB_DISABLE_PLUGIN_AUTOLOAD",
    show_envvar=True,
    help="Do not load third-party plugins (entry-point group 'armlab').",
)
@click.pass_context
def cli(ctx: click.Context, no_plugins: bool) -> None:
    """armlab: run bandit experiments, simulated or live."""
    with user_errors():
        apply_heap_setting()  # the process is armlab's own (ARMLAB_HEAP_HEADROOM=0 turns it off)
    ctx.obj = App(load_entrypoints=not no_plugins)


cli.add_command(run_command)
cli.add_command(plugins_command)
cli.add_command(validate_command)
cli.add_command(compare_command)
cli.add_command(report_command)
cli.add_command(experiments_command)
cli.add_command(export_command)
cli.add_command(evaluate_command)
cli.add_command(storage_group)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="armlab")
