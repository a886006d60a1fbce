"""Parse ``--storage URL`` and open the storage it names.

Supported: ``sqlite:///PATH`` (three slashes then the path: ``sqlite:///./armlab.sqlite``
relative to the working directory, ``sqlite:////var/lib/armlab.sqlite`` absolute), and
``postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE`` (a database prepared with
``armlab storage init URL``; ``postgres://`` is accepted too).
"""

from __future__ import annotations

from pathlib import Path

from armlab.errors import ConfigError
from armlab.storage.base import Storage

__all__ = ["DEFAULT_STORAGE", "is_postgresql", "open_storage", "sqlite_path"]

DEFAULT_STORAGE = "sqlite:///./armlab.sqlite"
_FORMS = ("use sqlite:///PATH (e.g. sqlite:///./armlab.sqlite, or sqlite:////abs/path/armlab.sqlite) or "
          "postgresql://USER@HOST:PORT/DATABASE")


def is_postgresql(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database."""
    return url.lower().startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///PATH`` URL names; a ConfigError naming the fix for anything else."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigError(f"--storage {url!r} is not a storage URL: {_FORMS}")
    if is_postgresql(url):
        raise ConfigError(f"{url!r} is a PostgreSQL URL, not an SQLite file: {_FORMS}")
    if scheme.lower() != "sqlite":
        raise ConfigError(f"--storage {url!r}: unknown storage kind {scheme!r}; {_FORMS}")
    if not rest.startswith("/") or len(rest) < 2:
        raise ConfigError(f"--storage {url!r} names no file: {_FORMS}")
    path, _, query = rest[1:].partition("?")
    if query:
        raise ConfigError(f"--storage {url!r}: options after '?' are not supported; {_FORMS}")
    if path.endswith("/"):
        raise ConfigError(f"--storage {url!r} names a directory, not a file: {_FORMS}")
    return Path(path)


def open_storage(url: str, advertise_url: str | None = None) -> Storage:
    """Open the storage named by ``url`` (an SQLite catalog is created if new; a PostgreSQL
    database must hold armlab's tables: ``armlab storage init URL``, and records
    ``advertise_url`` as the owner of the journals this process opens)."""
    if is_postgresql(url):
        from armlab.storage.postgres import PostgresStorage

        return PostgresStorage.open(url, advertise_url)
    from armlab.storage.sqlite import SqliteStorage

    return SqliteStorage.open(url, sqlite_path(url))
