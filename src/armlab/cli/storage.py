"""``armlab storage init | upgrade URL``: create or upgrade armlab's tables in a PostgreSQL database.

The database and its user are the operator's (created with PostgreSQL's own tools); these
commands create armlab's tables in it and bring them to the format this armlab writes
(:mod:`armlab.orchestrator.journal.postgres_schema`).  Both are safe to run again.
"""

from __future__ import annotations

import click

from armlab.cli.errors import UserError, user_errors
from armlab.orchestrator.journal.postgres_schema import shown, upgrade

__all__ = ["storage_group"]


@click.group("storage")
def storage_group() -> None:
    """Create or upgrade the PostgreSQL database that holds armlab's journals."""


def _postgresql(url: str) -> str:
    if url.startswith("sqlite:"):
        raise UserError(f"{url}: SQLite storage needs no init or upgrade (armlab creates its file when it starts); "
                        "these commands take a PostgreSQL URL: postgresql://USER@HOST:PORT/DATABASE")
    return url


@storage_group.command("init")
@click.argument("url", metavar="URL")
def init_command(url: str) -> None:
    """Create armlab's tables in the database at URL (postgresql://USER@HOST:PORT/DATABASE)."""
    with user_errors():
        before, after = upgrade(_postgresql(url))
    if before is None:
        click.echo(f"{shown(url)}: armlab's tables created (format {after})")
    elif before == after:
        click.echo(f"{shown(url)}: already holds armlab's tables (format {after}); nothing to do")
    else:
        click.echo(f"{shown(url)}: armlab's tables upgraded from format {before} to {after}")


@storage_group.command("upgrade")
@click.argument("url", metavar="URL")
def upgrade_command(url: str) -> None:
    """Apply the migrations the database at URL lacks, in order (none: nothing changes)."""
    with user_errors():
        before, after = upgrade(_postgresql(url))
    change = "is current" if before == after else f"upgraded from format {before} to {after}"
    click.echo(f"{shown(url)}: armlab's tables {change} (format {after})")
