"""Where one experiment's journal is: a journal file, or a storage URL and an experiment name.

The commands that read a finished or stopped experiment (``armlab journal``, ``armlab
export``, ``armlab evaluate``) take either form; this is the one place that tells them apart.
"""

from __future__ import annotations

from pathlib import Path

from armlab.errors import ConfigError

__all__ = ["journal_file"]


def journal_file(location: str | Path, experiment: str | None) -> Path:
    """The journal file of ``location``: the file itself, or, for a storage URL
    (``sqlite:///PATH``), the journal of ``experiment`` in that storage."""
    text = str(location)
    if "://" not in text:
        if experiment is not None:
            raise ConfigError(f"--experiment names an experiment of a storage URL (sqlite:///PATH); {text!r} is "
                              "a journal file holding one experiment: drop --experiment")
        return Path(text)
    if experiment is None:
        raise ConfigError(f"{text!r} is a storage URL holding many experiments: name one with --experiment NAME")
    from armlab.storage.url import open_storage

    storage = open_storage(text)
    try:
        return Path(storage.journal_path(experiment))
    finally:
        storage.close()
