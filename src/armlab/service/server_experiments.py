"""The experiments of ``armlab server``: opened on first use, closed when idle, bounded in number.

Nothing is replayed at start: an experiment's journal is opened and replayed
(:meth:`~armlab.orchestrator.live.session.LiveSession.resume`, in a worker thread) when a
request first needs it, and it runs as ``armlab serve`` runs one experiment: its own
:class:`~armlab.service.service.Service` (group commit, timeouts), event hub and routes
(:func:`~armlab.service.app.experiment_app`), its valid asks and tells answered first by
:class:`~armlab.service.hot_routes.HotRoutes` (as inside that app, but before the app's own
per-request layers: the server's app has run its own), or, once the experiment is open, by
the server's entry point (:class:`~armlab.service.hot_entry.HotEntry`) before any layer.  At most ``max_loaded`` experiments
stay open; opening one more closes the least recently used one that no request is using (its journal is
flushed and closed; the next request replays it again, to the same state).

A journal that cannot be opened (a full disk, a damaged or missing file) or that fails to
write makes *that* experiment answer 503 with the reason, and is logged; the others go on.

On a storage shared by several processes (PostgreSQL) a journal held by another process
raises :class:`OwnedElsewhere` naming that process's advertised URL (the app answers 307
there); each summary's ``owner`` is the advertised URL of the process that holds it now.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from armlab.errors import ConfigError
from armlab.log import get_logger
from armlab.orchestrator.journal.postgres_schema import JournalInUse
from armlab.orchestrator.journal.store import JournalError
from armlab.orchestrator.live.session import LiveSession, journal_meta
from armlab.plugins.registry import Registry
from armlab.service.app import experiment_app, new_service
from armlab.service.events import EventHub
from armlab.service.hot_routes import HotRoutes
from armlab.service.models import DEFAULT_MAX_LOADED
from armlab.service.experiment_configs import served_session
from armlab.service.service import Service
from armlab.storage.base import ExperimentExists, ExperimentRecord, Storage, StorageUnavailable, UnknownExperiment

__all__ = ["Experiments", "ExperimentUnavailable", "OwnedElsewhere", "iso"]

log = get_logger(__name__)


class ExperimentUnavailable(Exception):
    """The experiment's journal cannot be opened or written now (503)."""


class OwnedElsewhere(Exception):
    """Another server process owns the experiment: ``owner`` is its advertised URL (307)."""

    def __init__(self, name: str, owner: str) -> None:
        super().__init__(f"experiment {name!r} is served by {owner}")
        self.owner = owner


def iso(seconds: float | None) -> str | None:
    """ISO-8601 UTC of a time in seconds since the epoch (None stays None)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass(eq=False)
class Loaded:
    """One open experiment: its service and routes, and how many requests are using it."""

    name: str
    service: Service
    app: HotRoutes  # the experiment's routes, its valid asks and tells answered first
    active: int = 0
    closing: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)
    failed: bool = False


class Experiments:
    """The server's experiments over ``storage`` (see the module docstring)."""

    def __init__(self, storage: Storage, registry: Registry, *, max_loaded: int = DEFAULT_MAX_LOADED,
                 max_subscribers: int = 100, base_dir: Path | None = None, advertise_url: str | None = None) -> None:
        self.storage = storage
        self.advertise_url = advertise_url  # this process's URL: the owner of what it has open
        self.registry = registry
        self.max_loaded = max_loaded
        self.max_subscribers = max_subscribers
        self.base_dir = base_dir or Path.cwd()
        self.loads = 0  # journal replays so far (a test sees eviction and reload)
        self._open: OrderedDict[str, Loaded] = OrderedDict()  # least recently used first
        self._locks: dict[str, anyio.Lock] = {}
        self._tg: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Host the open experiments while inside; close them all on the way out."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                for loaded in list(self._open.values()):
                    loaded.closing.set()
                self._tg = None

    @property
    def loaded(self) -> list[str]:
        return list(self._open)

    # -- creating and using ------------------------------------------------------------------
    def create(self, name: str, config: str | dict[str, Any]) -> ExperimentRecord:
        """Validate ``config`` and store a new experiment (not opened until first used)."""
        try:
            self.storage.get_experiment(name)
            raise ExperimentExists(f"experiment {name} exists")
        except UnknownExperiment:
            pass
        session = served_session(config, self.base_dir, self.registry)
        text = config if isinstance(config, str) else json.dumps(config, sort_keys=True)
        record = self.storage.create_experiment(name, text, journal_meta(session.plan))
        self.storage.save_summary(name, {"state": session.experiment.state.value, "trials": 0, "recommendation": None,
                                         "budget": session.config.problem.budget}, None)
        return record

    @asynccontextmanager
    async def use(self, name: str) -> AsyncIterator[Loaded]:
        """The open experiment ``name`` (opened now if needed), kept open while inside."""
        loaded = await self._acquire(name)
        loaded.active += 1
        try:
            yield loaded
        finally:
            loaded.active -= 1

    def open_now(self, name: str) -> Loaded | None:
        """The experiment ``name`` if it is open and not closing (None: :meth:`use` opens it or
        waits for it); hold it with ``active`` while using it."""
        loaded = self._open.get(name)
        if loaded is None or loaded.closing.is_set():
            return None
        self._open.move_to_end(name)
        return loaded

    async def _acquire(self, name: str) -> Loaded:
        while True:
            loaded = self.open_now(name)
            if loaded is not None:
                return loaded
            loaded = self._open.get(name)
            if loaded is not None:
                await loaded.closed.wait()
                continue
            async with self._locks.setdefault(name, anyio.Lock()):
                if name not in self._open:
                    await self._load(name)

    async def _load(self, name: str) -> None:
        record = self.storage.get_experiment(name)  # UnknownExperiment: 404
        try:
            journal = await anyio.to_thread.run_sync(self.storage.open_journal, name)
            session = await anyio.to_thread.run_sync(LiveSession.resume, journal, None, self.registry)
        except JournalInUse as exc:
            raise self._held_elsewhere(name, "opened", exc) from None
        except (JournalError, ConfigError) as exc:
            log.error("experiment_unavailable", experiment=name, reason=str(exc))
            raise ExperimentUnavailable(f"experiment {name!r} cannot be opened: {exc}") from None
        self.loads += 1
        service = new_service(session, EventHub(max_subscribers=self.max_subscribers),
                              lambda exc: self._failed(name, exc))
        service.halted = record.stopped
        app = experiment_app(service)
        loaded = Loaded(name, service, HotRoutes(app, service, app.exception_handlers))
        assert self._tg is not None, "the server is not running"
        await self._tg.start(self._host, loaded)
        self._open[name] = loaded
        log.info("experiment_opened", experiment=name, replayed=session.replayed)
        self._close_over_cap()

    async def _host(self, loaded: Loaded, *, task_status: TaskStatus[None]) -> None:
        service = loaded.service
        try:
            async with service.running():
                task_status.started()
                await loaded.closing.wait()
        finally:
            if not loaded.failed:
                self._save_summary(loaded)
            service.session.close()
            if self._open.get(loaded.name) is loaded:
                del self._open[loaded.name]
            loaded.closed.set()
            log.info("experiment_closed", experiment=loaded.name)

    def _failed(self, name: str, exc: Exception) -> None:
        """The journal of one experiment failed to write: close it (the next use reopens it)."""
        log.error("experiment_journal_failed", experiment=name, reason=str(exc))
        loaded = self._open[name]
        loaded.failed = True
        loaded.closing.set()

    def _close_over_cap(self) -> None:
        idle = [loaded for loaded in self._open.values() if loaded.active == 0 and not loaded.closing.is_set()]
        for loaded in idle[: max(0, len(self._open) - self.max_loaded)]:
            loaded.closing.set()

    async def close(self, name: str) -> None:
        """Close ``name`` if it is open (after the requests using it)."""
        loaded = self._open.get(name)
        if loaded is not None:
            loaded.closing.set()
            await loaded.closed.wait()

    # -- operator actions --------------------------------------------------------------------
    async def stop(self, name: str) -> dict[str, Any]:
        async with self.use(name) as loaded:
            loaded.service.halted = True
            self.storage.set_stopped(name)
            return self.summary_of(loaded)

    async def delete(self, name: str) -> None:
        """Delete a stopped experiment; a ValueError names the fix for one that is not stopped.

        Only the process that owns the experiment deletes it: this one closes its own copy,
        and the storage refuses while another process holds the journal
        (:class:`OwnedElsewhere`: the app redirects the request there, as every other
        route of the experiment), in the transaction that deletes it."""
        if not self.storage.get_experiment(name).stopped:
            raise ValueError(f"experiment {name} is not stopped: stop it first (POST /experiments/{name}/stop)")
        await self.close(name)
        try:
            self.storage.delete_experiment(name)
        except JournalInUse as exc:
            raise self._held_elsewhere(name, "deleted", exc) from None

    def _held_elsewhere(self, name: str, what: str, exc: JournalInUse) -> Exception:
        """What to raise when another holder of ``name``'s journal keeps it from being ``what``:
        :class:`OwnedElsewhere` naming a server, else (a tool, or this process's own ghost
        whose lock the database has not yet dropped) :class:`ExperimentUnavailable`."""
        if exc.owner is None or exc.owner == self.advertise_url:
            return ExperimentUnavailable(f"experiment {name!r} cannot be {what} now: {exc}")
        return OwnedElsewhere(name, exc.owner)

    # -- summaries -----------------------------------------------------------------------------
    def summary_of(self, loaded: Loaded) -> dict[str, Any]:
        """The summary of an open experiment, from its state now."""
        service = loaded.service
        record = self.storage.get_experiment(loaded.name)
        return _summary(record, {
            "state": service.state, "trials": len(service.experiment.trials),
            "recommendation": _shown(service), "last_activity": service.last_activity or record.last_activity,
        }, service.session.config.problem.budget, self.advertise_url)

    def summaries_of(self, name: str) -> dict[str, Any]:
        """The summary of ``name``, open or not (as last saved)."""
        return self._summary_from(self.storage.get_experiment(name), self.storage.owners())

    def _summary_from(self, record: ExperimentRecord, owners: dict[str, str]) -> dict[str, Any]:
        loaded = self._open.get(record.name)
        if loaded is not None:
            return self.summary_of(loaded)
        return _summary(record, record.summary or {}, None, owners.get(record.name))

    def summaries(self) -> list[dict[str, Any]]:
        """Every experiment's summary: open ones as they are now, the others as last saved."""
        owners = self.storage.owners()
        return [self._summary_from(record, owners) for record in self.storage.list_experiments()]

    def _save_summary(self, loaded: Loaded) -> None:
        service = loaded.service
        try:
            self.storage.save_summary(loaded.name, {
                "state": service.state, "trials": len(service.experiment.trials), "recommendation": _shown(service),
                "budget": service.session.config.problem.budget,
            }, service.last_activity or self.storage.get_experiment(loaded.name).last_activity)
        except UnknownExperiment:
            pass  # deleted meanwhile
        except StorageUnavailable as exc:  # the cached summary is for listings only: the journal holds the state
            log.warning("summary_not_saved", experiment=loaded.name, reason=str(exc))


def _shown(service: Service) -> Any:
    """The recommendation as ``/status`` shows it (null before any result)."""
    return service.experiment.recommendation() if service.experiment.counters.closed else None


def _summary(record: ExperimentRecord, known: dict[str, Any], budget: int | None, owner: str | None) -> dict[str, Any]:
    state = known.get("state", "running")
    if record.stopped and state != "finished":
        state = "stopped"
    return {
        "name": record.name,
        "state": state,
        "trials": known.get("trials", 0),
        "budget": budget if budget is not None else known.get("budget"),
        "recommendation": known.get("recommendation"),
        "created": iso(record.created),
        "last_activity": iso(known.get("last_activity", record.last_activity)),
        "owner": owner,
    }

