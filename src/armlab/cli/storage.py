"""``armlab storage init | upgrade URL``: create or upgrade armlab's tables in a PostgreSQL
database; ``armlab storage copy FROM TO``: move experiments between storages.

The database and its user are the operator's (created with PostgreSQL's own tools); init
and upgrade create armlab's tables in it and bring them to the format this armlab writes
(:mod:`armlab.orchestrator.journal.postgres_schema`).  Both are safe to run again.  Copy is
:mod:`armlab.storage.copy`.
"""

from __future__ import annotations

import click

from armlab.cli.errors import UserError, user_errors
from armlab.orchestrator.journal.postgres_schema import shown, upgrade

__all__ = ["storage_group"]


@click.group("storage")
def storage_group() -> None:
    """Prepare a PostgreSQL database for armlab's experiments, or copy experiments between storages."""


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


@storage_group.command("copy")
@click.argument("source", metavar="FROM")
@click.argument("target", metavar="TO")
@click.option("--experiment", metavar="NAME",
              help="Copy only this experiment of FROM; for a journal file FROM, its name in TO (required).")
def copy_command(source: str, target: str, experiment: str | None) -> None:
    """Copy the experiments of the storage FROM (or the journal file FROM) into the storage TO.

    FROM and TO are sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE (after armlab
    storage init).  FROM is only read; each copy is verified by replaying it (its chain ends
    on the source's value).  Stop the servers using FROM first: a journal in use is refused.
    """
    from armlab.orchestrator.journal.postgres_schema import shown
    from armlab.storage.copy import copy_storage

    with user_errors():
        copied = copy_storage(source, target, experiment,
                              lambda done: click.echo(f"{done.name}: {done.events} events copied and verified"))
    click.echo(f"{len(copied)} experiment(s) copied from {shown(source)} to {shown(target)}")
