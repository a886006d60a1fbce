"""A throwaway PostgreSQL cluster for tests and benchmarks: started, used, and removed.

:meth:`ThrowawayCluster.start` runs ``initdb`` in a new temporary directory and starts the
server on a free port of 127.0.0.1 (its socket in that directory too); :meth:`stop` stops
it and removes the directory, leaving nothing behind.  ``initdb`` and ``postgres`` refuse
to run as root, so as root they run as the ``postgres`` user (which owns the directory).
The binaries are looked for in ``$ARMLAB_POSTGRES_BIN``, then Debian's
``/usr/lib/postgresql/VERSION/bin`` (the newest), then ``PATH``.  Every step is bounded by
a timeout.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from armlab.errors import ArmlabError

__all__ = ["ClusterUnavailable", "ThrowawayCluster"]

USER = "armlab"  # the cluster's superuser, trusted on 127.0.0.1 and the socket


class ClusterUnavailable(ArmlabError):
    """PostgreSQL's server binaries are missing, or the cluster did not start (the message says)."""


def server_binaries() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``."""
    candidates = [os.environ.get("ARMLAB_POSTGRES_BIN", "")]
    candidates += sorted((str(p.parent) for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")),
                         key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit() else 0, reverse=True)
    candidates.append(str(Path(shutil.which("initdb") or "").parent))
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    raise ClusterUnavailable(
        "PostgreSQL's server is not installed (no initdb in $ARMLAB_POSTGRES_BIN, /usr/lib/postgresql/*/bin or "
        "PATH): apt-get install postgresql (Debian), or set ARMLAB_POSTGRES_BIN to the folder holding initdb"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ThrowawayCluster:
    """A PostgreSQL server of its own, in a temporary directory, on 127.0.0.1:``port``."""

    def __init__(self, binaries: Path, folder: Path, port: int, timeout: float) -> None:
        self.binaries, self.folder, self.port, self.timeout = binaries, folder, port, timeout
        self.data, self.log = folder / "data", folder / "server.log"
        self._databases = 0

    @classmethod
    def start(cls, timeout: float = 60.0, settings: dict[str, str] | None = None) -> ThrowawayCluster:
        """Create and start a cluster (``settings``: extra server settings, e.g. ``fsync``)."""
        binaries = server_binaries()
        folder = Path(tempfile.mkdtemp(prefix="armlab-pg-"))
        cluster = cls(binaries, folder, free_port(), timeout)
        try:
            cluster._hand_over(folder)
            cluster._run("initdb", "-D", str(cluster.data), "-A", "trust", "-U", USER, "-E", "UTF8",
                         "--no-locale", "--no-sync")
            options = {"listen_addresses": "127.0.0.1", "unix_socket_directories": str(folder), **(settings or {})}
            cluster._run("pg_ctl", "-D", str(cluster.data), "-l", str(cluster.log), "-w", "-t", str(int(timeout)),
                         "-o", f"-p {cluster.port} " + " ".join(f"-c {k}={v}" for k, v in options.items()), "start")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cluster

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database (a copy of ``template1``: fast); its URL."""
        import psycopg

        self._databases += 1
        name = f"test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=int(self.timeout)) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def restart_immediately(self) -> None:
        """``pg_ctl restart -m immediate``: every connection is cut, nothing is shut down cleanly."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-m", "immediate", "-w", "-t",
                  str(int(self.timeout)), "restart")

    def stop(self) -> None:
        """Stop the server (fast, else immediately) and remove its directory."""
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", str(int(self.timeout)), "stop")
        except ClusterUnavailable:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", str(int(self.timeout)), "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _hand_over(self, folder: Path) -> None:
        """As root, give ``folder`` to the ``postgres`` user, who must be able to reach it."""
        if os.geteuid() != 0:
            return
        shutil.chown(folder, "postgres", "postgres")
        probe = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-w", str(folder)], timeout=self.timeout)
        if probe.returncode != 0:
            raise ClusterUnavailable(f"the postgres user cannot reach {str(folder)!r}: set TMPDIR to a directory "
                                     "whose parents every user may enter (chmod a+x)")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.binaries / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        try:
            # (the server's output goes to its log, never to these pipes, or this would wait for the server)
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout + 10)
        except subprocess.TimeoutExpired:
            raise ClusterUnavailable(f"{program} did not finish within {self.timeout + 10:.0f} s") from None
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise ClusterUnavailable(f"{program} failed ({done.returncode}): {done.stderr.strip()}\n{log}")
