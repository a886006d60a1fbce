"""``armlab storage copy``: move experiments between storages, verified by replay.

An experiment is copied with its catalog entry (configuration text, stopped flag, cached
summary, client token hashes, so its clients keep their tokens) and its journal: the same
meta data (so the chain starts on the same value) and the same events, after which the copy
is opened again, every event verified, and its chain must end on the source's value; a copy
that does not is removed.  A single-experiment journal file (``armlab serve --journal``,
``armlab journal backup``) is imported under the name given.  The source is only read; an
experiment whose name the target holds already is refused before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armlab.errors import ConfigError
from armlab.orchestrator.journal.integrity import JournalError
from armlab.orchestrator.journal.store import Journal
from armlab.storage.base import ExperimentRecord, Storage, UnknownExperiment, check_name
from armlab.storage.url import open_storage

__all__ = ["Copied", "copy_storage"]


@dataclass(frozen=True)
class Copied:
    """One experiment copied: its name and how many events its journal holds."""

    name: str
    events: int


def copy_storage(source: str, target: str, experiment: str | None = None,
                 progress: Callable[[Copied], None] = lambda copied: None) -> list[Copied]:
    """Copy the experiments of the storage URL ``source`` (only ``experiment`` if given), or
    the journal file ``source`` as ``experiment``, into the storage URL ``target``."""
    if "://" not in target:
        raise ConfigError(f"{target!r} is not a storage URL: copy into sqlite:///PATH or postgresql://...")
    into = open_storage(target)
    try:
        if "://" not in source:
            if experiment is None:
                raise ConfigError(f"{source!r} is a journal file: name its experiment in {target} with --experiment NAME")
            try:
                name = check_name(experiment)
            except ValueError as exc:
                raise ConfigError(f"--experiment: {exc}") from None
            return [_import_file(Path(source), name, into, progress)]
        origin = open_storage(source)
        try:
            names = [experiment] if experiment is not None else [r.name for r in origin.list_experiments()]
            records = [origin.get_experiment(name) for name in names]  # UnknownExperiment before any write
            _refuse_taken(into, names)
            tokens = origin.token_hashes()
            copied = []
            for record in records:
                with origin.open_journal(record.name) as journal:
                    done = _copy_one(record, journal, into)
                for digest, (token_id, name) in tokens.items():
                    if name == record.name:
                        into.add_token(name, token_id, digest)
                copied.append(done)
                progress(done)
            return copied
        finally:
            origin.close()
    finally:
        into.close()


def _import_file(path: Path, name: str, into: Storage, progress: Callable[[Copied], None]) -> Copied:
    if not path.is_file():
        raise ConfigError(f"journal {str(path)!r} does not exist: give a journal file or a storage URL")
    _refuse_taken(into, [name])
    with Journal.open(path) as journal:
        record = ExperimentRecord(name, json.dumps(journal.meta["config"], sort_keys=True), 0.0, False, None, None)
        done = _copy_one(record, journal, into)
    progress(done)
    return done


def _refuse_taken(into: Storage, names: list[str]) -> None:
    taken = [name for name in names if _exists(into, name)]
    if taken:
        raise ConfigError(f"{into.url} holds experiment(s) {', '.join(taken)} already: delete them there first "
                          "(stop, then DELETE /experiments/NAME), or copy into another storage")


def _exists(storage: Storage, name: str) -> bool:
    try:
        storage.get_experiment(name)
    except UnknownExperiment:
        return False
    return True


def _copy_one(record: ExperimentRecord, journal: Any, into: Storage) -> Copied:
    """Copy ``record`` and ``journal`` into ``into``; verify the copy by replaying it."""
    meta = {key: value for key, value in journal.meta.items() if key != "state"}
    events = list(journal.events())  # verified against the source's chain
    into.create_experiment(record.name, record.config, meta)
    try:
        with into.open_journal(record.name) as copy:
            copy.append_many(events)
        with into.open_journal(record.name) as copy:
            replayed = sum(1 for _ in copy.events())
            if (replayed, copy.position) != (len(events), journal.position):
                raise JournalError(f"the copy of {record.name} does not end on the source's chain value "
                                   f"({replayed} of {len(events)} events); it was removed")
        if record.summary is not None:
            into.save_summary(record.name, record.summary, record.last_activity)
        if record.stopped:
            into.set_stopped(record.name)
    except BaseException:
        into.delete_experiment(record.name)
        raise
    return Copied(record.name, len(events))
