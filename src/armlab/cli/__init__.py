"""The ``armlab`` command line: a click group whose commands live one per module."""

from __future__ import annotations

import click

from armlab._version import __version__
from armlab.cli.app import App
from armlab.cli.errors import UserError, user_errors
from armlab.cli.plugins import plugins_command
from armlab.cli.run import run_command
from armlab.cli.validate import validate_command
from armlab.errors import ArmlabError
from armlab.orchestrator.heap import apply_heap_setting

__all__ = ["cli", "main"]


class ArmlabGroup(click.Group):
    """The root group; commands from plugins (``armlab_register_commands``) join on first use."""

    _plugins_loaded = False

    def _load_plugin_commands(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        try:
            App(load_entrypoints=None).registry.pm.hook.armlab_register_commands(cli=self)
        except ArmlabError as exc:
            raise UserError(str(exc)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load_plugin_commands()
        return super().get_command(ctx, cmd_name)


@click.group(cls=ArmlabGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    with user_errors():
        apply_heap_setting()  # the process is armlab's own (ARMLAB_HEAP_HEADROOM=0 turns it off)
    ctx.obj = App(load_entrypoints=not no_plugins)


cli.add_command(run_command)
cli.add_command(plugins_command)
cli.add_command(validate_command)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="armlab")
