"""The ask/tell HTTP service: a FastAPI app around one live session.

Endpoints (all but ``/openapi.json`` need ``Authorization: Bearer TOKEN`` unless the
service was started insecure on loopback):

* ``POST /ask`` -> a trial to run (``key`` makes it idempotent, ``wait`` waits for a slot);
  409 with ``state`` when none can be dispatched (in-flight slots full, budget spent, stopped);
* ``POST /tell`` -> accepted / duplicate / late; 404 unknown trial, 409 conflicting report,
  422 unusable reward.  The answer is sent only after the report is in the journal;
* ``POST /abandon``, ``GET /trials/{id}``, ``GET /status`` (counts, pending, estimates,
  recommendation, confidence) and ``GET /events`` (server-sent events: the experiment's typed
  events, docs/events.md).

Request bodies larger than ``max_body_size`` get 413 (:class:`~armlab.service.body_limit.BodyLimit`).

All state changes run synchronously on the event loop, so they are applied (and journaled)
one at a time, in one order.  When the source runs trials itself (command, callback,
webhook) the service also drives them (``/ask`` is then refused); for ``external`` trials,
``[feedback] timeout`` fails trials not reported in time.
"""


import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.sse import EventSourceResponse, ServerSentEvent
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from armlab._version import __version__
from armlab.adapters.base import RewardRejected
from armlab.log import get_logger
from armlab.orchestrator.group_commit import GroupCommit
from armlab.orchestrator.journal import JournalError
from armlab.events import ExperimentEvent
from armlab.orchestrator.live import LiveRun, TrialOutcome
from armlab.orchestrator.live_types import (
    ExperimentState,
    NoTrialAvailable,
    ReportConflict,
    RetireRefused,
    TrialRecord,
    UnknownTrial,
)
from armlab.orchestrator.session import LiveSession
from armlab.service.auth import token_matches
from armlab.service.body_limit import BodyLimit
from armlab.service.host_check import LoopbackHostOnly
from armlab.service.events import EventHub
from armlab.service.models import (
    DEFAULT_MAX_BODY,
    AbandonIn,
    AskBatchIn,
    AskBatchOut,
    AskIn,
    ErrorOut,
    ItemReportOut,
    ReportOut,
    RetireIn,
    RetireOut,
    StatusOut,
    TellBatchIn,
    TellBatchOut,
    TrialOut,
    tell_model,
)

__all__ = ["Service", "create_app"]

log = get_logger(__name__)


class Service:
    """The service's behaviour, independent of HTTP: waiting asks, timeouts, driving trials.

    Every change of the experiment first awaits :meth:`turn` (no change while a journal
    batch is being written), every answer and every status awaits :meth:`durable`, and a
    failed journal write stops the service through ``on_fatal`` (see
    :mod:`armlab.orchestrator.group_commit`).
    """

    def __init__(
        self, session: LiveSession, hub: EventHub, on_fatal: Callable[[Exception], None] | None = None
    ) -> None:
        self.session = session
        self.experiment = session.experiment
        self.hub = hub
        self.on_fatal = on_fatal
        self.writer: GroupCommit | None = None  # batched journal writes, while the app runs
        self._slot_freed: anyio.Event | None = None
        self.experiment.add_listener(self._on_event)

    async def turn(self) -> None:
        """Return when the experiment may change (call right before ask, tell, fail, abandon)."""
        if self.writer is not None:
            await self.writer.turn()

    async def durable(self) -> None:
        """Return once every change made so far is in the journal (call before answering)."""
        if self.writer is not None:
            await self.writer.durable()

    def journal_failed(self, exc: JournalError) -> None:
        """The journal can no longer be written: refuse everything, and stop the process."""
        log.error("journal_write_failed", reason=str(exc))
        if self.on_fatal is not None:
            self.on_fatal(exc)

    def _on_event(self, event: ExperimentEvent) -> None:
        if isinstance(event, TrialOutcome) and self._slot_freed is not None:
            self._slot_freed.set()
            self._slot_freed = None

    async def ask(self, key: str | None, wait: float) -> TrialRecord:
        self._refuse_if_runs_trials()
        deadline = anyio.current_time() + wait
        while True:
            await self.turn()
            try:
                return self.experiment.record(self.experiment.ask(key).id)
            except NoTrialAvailable as exc:
                remaining = deadline - anyio.current_time()
                if exc.state is not ExperimentState.IN_FLIGHT_FULL or remaining <= 0:
                    raise
            if self._slot_freed is None:
                self._slot_freed = anyio.Event()
            with anyio.move_on_after(remaining):
                await self._slot_freed.wait()

    async def ask_many(self, count: int, keys: list[str] | None) -> list[TrialRecord]:
        """Dispatch up to ``count`` trials at once (all in the same journal batch)."""
        self._refuse_if_runs_trials()
        await self.turn()
        records: list[TrialRecord] = []
        for i in range(count):
            try:
                key = keys[i] if keys is not None and i < len(keys) else None
                records.append(self.experiment.record(self.experiment.ask(key).id))
            except NoTrialAvailable:
                if not records:
                    raise
                break
        return records

    def tell_one(self, trial_id: int, reward: Any) -> ItemReportOut:
        """One report of a batch: its outcome, or the reason it was refused, never an exception."""
        try:
            report = self.experiment.tell(trial_id, reward)
        except UnknownTrial as exc:
            return ItemReportOut(trial_id=trial_id, status="unknown", message=str(exc))
        except ReportConflict as exc:
            return ItemReportOut(trial_id=trial_id, status="conflict", message=str(exc))
        except RewardRejected as exc:
            return ItemReportOut(trial_id=trial_id, status="rejected", message=str(exc))
        return ItemReportOut(trial_id=trial_id, status=report.status, message=report.message)

    def arm_index(self, bandit: int, arm: int | str) -> int:
        """``arm`` as an index: a name is looked up among bandit ``bandit``'s arm names."""
        if bandit >= len(self.session.sources):
            raise RetireRefused(f"no bandit {bandit}: this experiment has bandits 0..{len(self.session.sources) - 1}")
        names = self.session.arm_names(bandit)
        if isinstance(arm, int):
            return arm
        if arm not in names:
            raise RetireRefused(f"no arm named {arm!r} in bandit {bandit}; its arms are {', '.join(names)}")
        return names.index(arm)

    def _refuse_if_runs_trials(self) -> None:
        if self.session.runs_trials:
            raise NoTrialAvailable(
                self.experiment.state,
                f"source {self.session.sources[0].name!r} runs its own trials; "
                "follow them with /status or /events",
            )

    async def status(self) -> dict[str, Any]:
        """The state, sent only once everything it shows is durable."""
        cfg = self.session.config
        out = {
            "name": cfg.name,
            "policy": self.session.label,
            "source": self.session.sources[0].name,
            "arm_names": self.session.arm_names(0),
            **self.experiment.status(),
        }
        for b, entry in enumerate(out["bandits"]):
            entry["label"] = self.session.plan.bandits[b].label
            entry["arm_names"] = self.session.arm_names(b)
        await self.durable()
        return out

    async def run_background(self) -> None:
        """Drive the source's own trials, or expire unreported external trials."""
        timeout = self.session.config.feedback.timeout
        if self.session.runs_trials:
            await LiveRun(sources=self.session.sources, experiment=self.experiment, timeout=timeout,
                          writer=self.writer).run()
        elif timeout is not None:
            await self._expire_unreported(timeout)

    async def _expire_unreported(self, timeout: float) -> None:
        while True:
            await self.turn()
            now = time.time()
            for trial in self.experiment.pending_trials():
                if now - self.experiment.record(trial.id).dispatched_at >= timeout:
                    self.experiment.fail(trial.id, f"timed out: no report within {timeout} s")
            await anyio.sleep(min(timeout / 4, 1.0))


def trial_out(service: Service, record: TrialRecord) -> TrialOut:
    trial = record.trial
    return TrialOut(trial_id=trial.id, arm=trial.arm, arm_name=service.session.arm_names(trial.bandit)[trial.arm],
                    bandit_label=service.session.plan.bandits[trial.bandit].label,
                    bandit=trial.bandit, pull=trial.pull, status=record.status.value)


def _error(status: int, detail: str, state: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorOut(detail=detail, state=state).model_dump(), status_code=status, headers=headers)


def _install_error_handlers(app: FastAPI, service: Service) -> None:
    @app.exception_handler(NoTrialAvailable)
    async def no_trial(request: Request, exc: NoTrialAvailable) -> JSONResponse:
        retry = {"Retry-After": "1"} if exc.state is ExperimentState.IN_FLIGHT_FULL else None
        return _error(409, str(exc), exc.state.value, retry)

    @app.exception_handler(RetireRefused)
    async def retire_refused(request: Request, exc: RetireRefused) -> JSONResponse:
        return _error(409, str(exc), service.experiment.state.value)

    @app.exception_handler(UnknownTrial)
    async def unknown(request: Request, exc: UnknownTrial) -> JSONResponse:
        return _error(404, str(exc))

    @app.exception_handler(ReportConflict)
    async def conflict(request: Request, exc: ReportConflict) -> JSONResponse:
        return _error(409, str(exc), service.experiment.state.value)

    @app.exception_handler(RewardRejected)
    async def rejected(request: Request, exc: RewardRejected) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(JournalError)
    async def journal_failed(request: Request, exc: JournalError) -> JSONResponse:
        log.error("journal_write_failed", reason=str(exc))
        return _error(503, f"the report was not recorded (journal write failed): {exc}")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {err.get('msg', 'invalid')}")
        return _error(422, "; ".join(problems) or "invalid request")


_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "missing or wrong bearer token"},
    422: {"model": ErrorOut, "description": "malformed request or unusable reward"},
}


def create_app(
    session: LiveSession,
    *,
    token: str | None,
    hub: EventHub | None = None,
    max_body_size: int = DEFAULT_MAX_BODY,
    on_fatal: Callable[[Exception], None] | None = None,
) -> FastAPI:
    """The HTTP app serving ``session``; ``token=None`` disables authentication (insecure).

    ``on_fatal(exc)`` is called when the journal can no longer be written: the server
    running the app must stop (``armlab serve`` exits with status 2).

    ``hub`` (a new one by default) receives the experiment's events for ``GET /events``.
    """
    hub = hub or EventHub()
    session.experiment.add_listener(hub)
    service = Service(session, hub, on_fatal)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with session.group_commit(service.journal_failed) as writer, anyio.create_task_group() as tg:
            service.writer = writer
            tg.start_soon(service.run_background)
            yield
            tg.cancel_scope.cancel()
        service.writer = None

    app = FastAPI(
        title=f"armlab ask/tell service: {session.config.name}",
        version=__version__,
        description=__doc__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(BodyLimit, max_bytes=max_body_size)
    if token is None:
        app.add_middleware(LoopbackHostOnly)  # no token: DNS rebinding must not reach it
    app.state.service = service
    bearer = HTTPBearer(auto_error=False, description="the service's token (ARMLAB_TOKEN or --token-file)")

    async def authorized(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        # async: a plain function would be run in a worker thread for every request
        if token is None:
            return
        if credentials is None or not token_matches(token, credentials.credentials):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    guard = [Depends(authorized)]
    TellBody = tell_model(session.experiment.problem.reward_range)  # noqa: N806 - a model class
    _install_error_handlers(app, service)

    @app.post("/ask", dependencies=guard, responses={**_ERRORS, 409: {"model": ErrorOut}})
    async def ask(body: AskIn | None = None) -> TrialOut:
        """Dispatch the policy's next trial (idempotent per ``key``)."""
        body = body or AskIn()
        record = await service.ask(body.key, body.wait)
        await service.durable()
        return trial_out(service, record)

    @app.post("/tell", dependencies=guard, responses={**_ERRORS, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
    async def tell(body: TellBody) -> ReportOut:  # type: ignore[valid-type]
        """Report a trial's reward; answered once the report is durable."""
        await service.turn()
        report = service.experiment.tell(body.trial_id, body.reward)
        await service.durable()
        return ReportOut(trial_id=report.trial_id, status=report.status, message=report.message)

    @app.post("/ask/batch", dependencies=guard, responses={**_ERRORS, 409: {"model": ErrorOut}})
    async def ask_batch(body: AskBatchIn) -> AskBatchOut:
        """Dispatch up to ``count`` trials in one request (one journal transaction); fewer when
        the experiment cannot dispatch more, 409 only when it can dispatch none."""
        records = await service.ask_many(body.count, body.keys)
        await service.durable()
        return AskBatchOut(trials=[trial_out(service, r) for r in records], state=service.experiment.state.value)

    @app.post("/tell/batch", dependencies=guard, responses=_ERRORS)
    async def tell_batch(body: TellBatchIn) -> TellBatchOut:
        """Report many rewards in one request (one journal transaction), with a result per report."""
        await service.turn()
        results = [service.tell_one(item.trial_id, item.reward) for item in body.reports]
        await service.durable()
        return TellBatchOut(results=results)

    @app.post("/retire", dependencies=guard, responses={**_ERRORS, 409: {"model": ErrorOut}})
    async def retire(body: RetireIn) -> RetireOut:
        """Retire an arm: never dispatched again, its results kept; journaled like every change."""
        arm = service.arm_index(body.bandit, body.arm)
        await service.turn()
        changed = service.experiment.retire(arm, body.bandit, body.reason)
        await service.durable()
        return RetireOut(bandit=body.bandit, arm=arm, arm_name=service.session.arm_names(body.bandit)[arm],
                         status="retired" if changed else "already retired")

    @app.post("/abandon", dependencies=guard, responses={**_ERRORS, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
    async def abandon(body: AbandonIn) -> ReportOut:
        """Give a pending trial up (its slot is freed; it gets no reward)."""
        await service.turn()
        report = service.experiment.abandon(body.trial_id, body.reason)
        await service.durable()
        return ReportOut(trial_id=report.trial_id, status=report.status, message=report.message)

    @app.get("/trials/{trial_id}", dependencies=guard, responses={**_ERRORS, 404: {"model": ErrorOut}})
    async def trial(trial_id: int) -> TrialOut:
        """One trial and its status."""
        return trial_out(service, service.experiment.record(trial_id))

    @app.get("/status", dependencies=guard, responses=_ERRORS)
    async def status() -> StatusOut:
        """State, counts, pending trials, estimates, recommendation and confidence."""
        return StatusOut.model_validate(await service.status())

    json_401 = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}  # not an event stream

    @app.get("/events", dependencies=guard, response_class=EventSourceResponse,
             responses={401: {"description": _ERRORS[401]["description"], "content": json_401}})
    async def events() -> AsyncIterator[ServerSentEvent]:
        """Server-sent events: one per experiment event (``event``: its kind, ``id``: a sequence
        number, ``data``: its fields as JSON); comments say when the reader connected and how
        many events it lost by reading too slowly; idle streams get keep-alive comments."""
        async with service.hub.subscribe() as subscription:
            yield ServerSentEvent(comment="connected")
            reported_drops = 0
            async for item in subscription.receive:
                if subscription.dropped > reported_drops:
                    reported_drops = subscription.dropped
                    yield ServerSentEvent(comment=f"{reported_drops} events dropped (reader too slow)")
                yield ServerSentEvent(data=item, event=item["event"], id=str(item["id"]))

    _mount_dashboard(app)
    return app


#: Headers of the dashboard's files: scripts, styles and connections from this origin only,
#: no framing (the page holds the token), no referrer, revalidated so upgrades take effect.
_DASHBOARD_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _DashboardFiles(StaticFiles):
    """The dashboard's static files (``armlab/service/dashboard``), sent with :data:`_DASHBOARD_HEADERS`."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(_DASHBOARD_HEADERS)
        return response


def _mount_dashboard(app: FastAPI) -> None:
    """Serve the web dashboard at ``/dashboard/`` (``/`` redirects there).

    Its files hold no data, so they are served without the bearer check; the page asks for
    the token and sends it with every request for data (``/status``, ``/events``).
    """

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("dashboard/")

    app.mount("/dashboard", _DashboardFiles(packages=[("armlab.service", "dashboard")], html=True), name="dashboard")
