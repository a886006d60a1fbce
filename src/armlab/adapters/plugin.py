"""Registers the live adapters (callback, command, webhook, external) and the live-run commands."""

from __future__ import annotations

import click

from armlab.adapters.callback import Callback
from armlab.adapters.command import Command
from armlab.adapters.external import External
from armlab.adapters.webhook import Webhook
from armlab.plugins import hookimpl


@hookimpl
def armlab_register_sources():
    return [Callback, Command, Webhook, External]


@hookimpl
def armlab_register_commands(cli: click.Group) -> None:
    from armlab.service.cli import (  # web stack loads when used
        resume_command,
        retire_command,
        serve_command,
        server_command,
    )
    from armlab.service.journal_cli import journal_group

    cli.add_command(serve_command)
    cli.add_command(server_command)
    cli.add_command(resume_command)
    cli.add_command(retire_command)
    cli.add_command(journal_group)
