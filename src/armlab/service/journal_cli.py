"""``armlab journal``: check, back up and salvage the journal of a live experiment.

A journal is two files while in use (``NAME`` and ``NAME-wal``); these commands work on a
journal that no process is using (the journal is opened exclusively, so a journal in use
is refused with a clear message).  JOURNAL is a journal file, or a storage URL of
``armlab server`` (``sqlite:///PATH``) with ``--experiment NAME``.
"""

from __future__ import annotations

import click

from armlab.cli.errors import user_errors
from armlab.orchestrator.journal.repair import salvage
from armlab.orchestrator.journal.store import Journal
from armlab.storage.locate import journal_file

__all__ = ["journal_group"]

_EXPERIMENT = click.option("--experiment", metavar="NAME",
                           help="The experiment, when JOURNAL is a storage URL (sqlite:///PATH).")


def _journal_file(journal: str, experiment: str | None) -> str:
    """The journal file that JOURNAL (a file, or a storage URL with ``--experiment``) names."""
    with user_errors():
        return str(journal_file(journal, experiment))


@click.group("journal")
def journal_group() -> None:
    """Check, back up or salvage a live experiment's journal (stop the service first)."""


@journal_group.command("verify")
@click.argument("journal_path", metavar="JOURNAL")
@_EXPERIMENT
def verify_command(journal_path: str, experiment: str | None) -> None:
    """Read every event of JOURNAL and check its integrity chain."""
    path = _journal_file(journal_path, experiment)
    with user_errors(), Journal.open(path) as journal:
        count = sum(1 for _ in journal.events())
    click.echo(f"{path}: {count} events, integrity chain intact")


@journal_group.command("backup")
@click.argument("journal_path", metavar="JOURNAL")
@click.argument("target", metavar="COPY", type=click.Path(dir_okay=False))
@_EXPERIMENT
def backup_command(journal_path: str, target: str, experiment: str | None) -> None:
    """Copy JOURNAL (both of its files' content) into the single new file COPY."""
    path = _journal_file(journal_path, experiment)
    with user_errors(), Journal.open(path) as journal:
        count = sum(1 for _ in journal.events())  # never back up a damaged journal unawares
        journal.backup(target)
    click.echo(f"{path}: {count} events copied to {target}")


@journal_group.command("salvage")
@click.argument("journal_path", metavar="JOURNAL")
@click.argument("target", metavar="NEW", type=click.Path(dir_okay=False))
@_EXPERIMENT
def salvage_command(journal_path: str, target: str, experiment: str | None) -> None:
    """Copy the readable, verified events of a damaged JOURNAL into the new journal NEW.

    JOURNAL is only read.  Resume NEW with armlab resume NEW (or armlab serve
    --journal NEW): the events after the damage are lost, and trials that were pending
    then are run or asked for again.
    """
    path = _journal_file(journal_path, experiment)
    with user_errors():
        kept = salvage(path, target)
    click.echo(f"{kept} events of {path} copied to {target}; resume it with: armlab resume {target}")
