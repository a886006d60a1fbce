"""``armlab journal``: check, back up and salvage the journal of a live experiment.

A journal is two files while in use (``NAME`` and ``NAME-wal``); these commands work on a
journal that no process is using (the journal is opened exclusively, so a journal in use
is refused with a clear message).  JOURNAL is a journal file, or a storage URL of
``armlab server`` (``sqlite:///PATH`` or ``postgresql://...``) with ``--experiment NAME``.
A backup or a salvaged copy is always a new journal file, which ``armlab resume`` reads and
``armlab storage copy`` moves into a storage.
"""

from __future__ import annotations

import click

from armlab.cli.errors import user_errors
from armlab.orchestrator.journal.repair import salvage, salvage_into
from armlab.storage.locate import Located, locate, opened_journal

__all__ = ["journal_group"]

_EXPERIMENT = click.option("--experiment", metavar="NAME",
                           help="The experiment, when JOURNAL is a storage URL (sqlite:///PATH, postgresql://...).")


def _located(journal: str, experiment: str | None) -> Located:
    """The journal that JOURNAL (a file, or a storage URL with ``--experiment``) names."""
    with user_errors():
        return locate(journal, experiment)


@click.group("journal")
def journal_group() -> None:
    """Check, back up or salvage a live experiment's journal (stop the service first)."""


@journal_group.command("verify")
@click.argument("journal_path", metavar="JOURNAL")
@_EXPERIMENT
def verify_command(journal_path: str, experiment: str | None) -> None:
    """Read every event of JOURNAL and check its integrity chain."""
    located = _located(journal_path, experiment)
    with user_errors(), opened_journal(located) as journal:
        count = sum(1 for _ in journal.events())
    click.echo(f"{located.shown}: {count} events, integrity chain intact")


@journal_group.command("backup")
@click.argument("journal_path", metavar="JOURNAL")
@click.argument("target", metavar="COPY", type=click.Path(dir_okay=False))
@_EXPERIMENT
def backup_command(journal_path: str, target: str, experiment: str | None) -> None:
    """Copy JOURNAL (both of its files' content, or its rows) into the single new file COPY."""
    located = _located(journal_path, experiment)
    with user_errors(), opened_journal(located) as journal:
        count = sum(1 for _ in journal.events())  # never back up a damaged journal unawares
        journal.backup(target)
    click.echo(f"{located.shown}: {count} events copied to {target}")


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
    located = _located(journal_path, experiment)
    with user_errors():
        if located.file is not None:
            kept = salvage(located.file, target)
        else:
            with opened_journal(located) as journal:
                kept = salvage_into(target, journal.meta, journal.events(), located.shown)
    click.echo(f"{kept} events of {located.shown} copied to {target}; resume it with: armlab resume {target}")
