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

A request without the token gets 401, and a ``POST`` without ``Content-Type: application/json``
415, both before its body is read (:class:`~armlab.service.request_checks.RequestChecks`);
request bodies larger than ``max_body_size`` get 413 (:class:`~armlab.service.body_limit.BodyLimit`).
JSON answers carry ``nosniff`` and ``no-store``, and an unexpected error answers a JSON 500
(:class:`~armlab.service.json_answers.JsonAnswers`).

All state changes run synchronously on the event loop, so they are applied (and journaled)
one at a time, in one order.  When the source runs trials itself (command, callback,
webhook) the service also drives them (``/ask`` is then refused); for ``external`` trials,
``[feedback] timeout`` fails trials not reported in time.
"""


from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from armlab._version import __version__
from armlab.adapters.base import RewardRejected
from armlab.log import get_logger
from armlab.orchestrator.journal.store import JournalError
from armlab.orchestrator.live.types import (
    ExperimentState,
    NoTrialAvailable,
    ReportConflict,
    RetireRefused,
    UnknownTrial,
)
from armlab.orchestrator.live.session import LiveSession
from armlab.service.service import Service, report_out, trial_out
from armlab.service.body_limit import BodyLimit
from armlab.service.history import add_history_route
from armlab.service.host_check import LoopbackHostOnly
from armlab.service.hot_routes import HotRoutes
from armlab.service.json_answers import JsonAnswers
from armlab.service.request_checks import RequestChecks
from armlab.service.event_stream import EventStreamResponse
from armlab.service.events import DEFAULT_MAX_SUBSCRIBERS, EventHub
from armlab.service.models import (
    DEFAULT_MAX_BODY,
    AbandonIn,
    AskBatchIn,
    AskBatchOut,
    AskIn,
    ErrorOut,
    ReportOut,
    RetireIn,
    RetireOut,
    StatusOut,
    TellBatchIn,
    TellBatchOut,
    TrialOut,
    tell_model,
)

__all__ = ["create_app", "experiment_app", "mount_dashboard", "new_service"]

log = get_logger(__name__)


def _error(status: int, detail: str, state: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorOut(detail=detail, state=state).model_dump(), status_code=status, headers=headers)


def _install_error_handlers(app: FastAPI, service: Service) -> None:
    @app.exception_handler(NoTrialAvailable)
    async def no_trial(request: Request, exc: NoTrialAvailable) -> JSONResponse:
        retry = {"Retry-After": "1"} if exc.state is ExperimentState.IN_FLIGHT_FULL else None
        return _error(409, str(exc), exc.state.value, retry)

    @app.exception_handler(RetireRefused)
    async def retire_refused(request: Request, exc: RetireRefused) -> JSONResponse:
        return _error(409, str(exc), service.state)

    @app.exception_handler(UnknownTrial)
    async def unknown(request: Request, exc: UnknownTrial) -> JSONResponse:
        return _error(404, str(exc))

    @app.exception_handler(ReportConflict)
    async def conflict(request: Request, exc: ReportConflict) -> JSONResponse:
        return _error(409, str(exc), service.state)

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
    415: {"model": ErrorOut, "description": "a POST whose Content-Type is not application/json"},
    422: {"model": ErrorOut, "description": "malformed request or unusable reward"},
}


def create_app(
    session: LiveSession,
    *,
    token: str | None,
    hub: EventHub | None = None,
    max_body_size: int = DEFAULT_MAX_BODY,
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS,
    on_fatal: Callable[[Exception], None] | None = None,
) -> FastAPI:
    """The HTTP app of ``armlab serve``, serving ``session``; ``token=None`` disables
    authentication (insecure).

    ``on_fatal(exc)`` is called when the journal can no longer be written: the server
    running the app must stop (``armlab serve`` exits with status 2).

    ``hub`` (a new one, for at most ``max_subscribers`` readers, by default) receives the
    experiment's events for ``GET /events``.
    """
    service = new_service(session, hub or EventHub(max_subscribers=max_subscribers), on_fatal)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with service.running():
            yield

    app = experiment_app(service, lifespan=lifespan)
    # the last added runs first: the checks of the head come before the body is read
    app.add_middleware(BodyLimit, max_bytes=max_body_size)
    app.add_middleware(RequestChecks, token=token)
    if token is None:
        app.add_middleware(LoopbackHostOnly)  # no token: DNS rebinding must not reach it
    app.add_middleware(JsonAnswers)
    return app


def new_service(session: LiveSession, hub: EventHub, on_fatal: Callable[[Exception], None] | None) -> Service:
    """The :class:`Service` of ``session``, its events sent to ``hub``."""
    session.experiment.add_listener(hub)
    return Service(session, hub, on_fatal)


def experiment_app(service: Service, lifespan: Any = None) -> FastAPI:
    """The routes of one experiment (ask, tell, batches, abandon, retire, trials, status,
    events, the dashboard), served at ``/`` by ``armlab serve`` and at
    ``/experiments/{name}/`` by ``armlab server``.  Authentication and the request checks
    are the caller's middleware; the journal writer runs inside ``service.running()``."""
    session = service.session
    app = FastAPI(
        title=f"armlab ask/tell service: {session.config.name}",
        version=__version__,
        description=__doc__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    # the token is checked by RequestChecks, before the body is read; this declares it in the schema
    bearer = HTTPBearer(auto_error=False, description="the service's token (ARMLAB_TOKEN or --token-file)")
    guard = [Depends(bearer)]
    TellBody = tell_model(session.experiment.problem.reward_range)  # noqa: N806 - a model class
    experiment = service.experiment
    _install_error_handlers(app, service)
    app.add_middleware(HotRoutes, service=service, handlers=app.exception_handlers)  # the innermost: valid asks and tells

    @app.post("/ask", dependencies=guard, responses={**_ERRORS, 409: {"model": ErrorOut}}, response_model=TrialOut)
    async def ask(body: AskIn) -> dict[str, Any]:
        """Dispatch the policy's next trial (idempotent per ``key``); ``{}`` asks with no key and no wait."""
        return await service.answer_ask(body)

    @app.post("/tell", dependencies=guard, responses={**_ERRORS, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}},
              response_model=ReportOut)
    async def tell(body: TellBody) -> dict[str, Any]:  # type: ignore[valid-type]
        """Report a trial's reward; answered once the report is durable."""
        return await service.answer_tell(body)

    @app.post("/ask/batch", dependencies=guard, responses={**_ERRORS, 409: {"model": ErrorOut}},
              response_model=AskBatchOut)
    async def ask_batch(body: AskBatchIn) -> dict[str, Any]:
        """Dispatch up to ``count`` trials in one request (one journal transaction); fewer when
        the experiment cannot dispatch more, 409 only when it can dispatch none."""
        return await service.answer_ask_batch(body)

    @app.post("/tell/batch", dependencies=guard, responses=_ERRORS, response_model=TellBatchOut)
    async def tell_batch(body: TellBatchIn) -> dict[str, Any]:
        """Report many rewards in one request (one journal transaction), with a result per report."""
        return await service.answer_tell_batch(body)

    @app.post("/retire", dependencies=guard, responses={**_ERRORS, 409: {"model": ErrorOut}})
    async def retire(body: RetireIn) -> RetireOut:
        """Retire an arm: never dispatched again, its results kept; journaled like every change."""
        return await service.change(service.retire, body.bandit, body.arm, body.reason)

    @app.post("/abandon", dependencies=guard, responses={**_ERRORS, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
    async def abandon(body: AbandonIn) -> ReportOut:
        """Give a pending trial up (its slot is freed; it gets no reward)."""
        return report_out(await service.change(experiment.abandon, body.trial_id, body.reason))

    @app.get("/trials/{trial_id}", dependencies=guard, responses={**_ERRORS, 404: {"model": ErrorOut}})
    async def trial(trial_id: int) -> TrialOut:
        """One trial and its status."""
        return trial_out(service, experiment.record(trial_id).trial)

    @app.get("/status", dependencies=guard, responses=_ERRORS)
    async def status() -> StatusOut:
        """State, counts, pending trials, estimates, recommendation and confidence."""
        return StatusOut.model_validate(await service.status())

    json_errors = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}  # not an event stream

    @app.get("/events", dependencies=guard, response_class=EventStreamResponse, status_code=200,
             responses={401: {"description": _ERRORS[401]["description"], "content": json_errors},
                        503: {"description": "every subscriber slot is taken (armlab serve --max-subscribers)",
                              "content": json_errors}})
    async def events() -> EventStreamResponse:
        """Server-sent events: one per experiment event (``event``: its kind, ``id``: a sequence
        number, ``data``: its fields as JSON); comments say when the reader connected and how
        many events it lost by reading too slowly; idle streams get keep-alive comments.
        503 when ``max_subscribers`` readers are connected already."""
        return EventStreamResponse(service.hub)

    add_history_route(app, lambda: service, dependencies=guard, responses=_ERRORS)
    mount_dashboard(app)
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


def mount_dashboard(app: FastAPI, page: str = "") -> None:
    """Serve the web dashboard at ``/dashboard/`` (``/`` redirects there, to ``page``: the
    experiment's page by default; ``armlab server`` names its list, ``experiments.html``).

    Its files hold no data, so they are served without the bearer check; the page asks for
    the token and sends it with every request for data (``/status``, ``/events``).
    """

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse(f"dashboard/{page}")

    app.mount("/dashboard", _DashboardFiles(packages=[("armlab.service", "dashboard")], html=True), name="dashboard")
