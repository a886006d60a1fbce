"""Registers armlab's optional built-in commands (plots, scaffolding) through the plugin hook."""

from __future__ import annotations

import click

from armlab.plugins import hookimpl


@hookimpl
def armlab_register_commands(cli: click.Group) -> None:
    return None
