"""The HTTP app of ``armlab server``: many experiments in one storage (docs/server.md).

Admin routes (the admin token; JSON):

* ``POST /experiments`` ``{"name", "config"}`` -> 201 with the experiment's first client token
  (shown once; only its hash is stored); 422 listing every problem of the config
  (``{"field", "message", "fix"}`` each); 409 if the name is taken;
* ``GET /experiments``, ``GET /experiments/{name}`` (a client token may read its own);
* ``POST /experiments/{name}/stop``: no more dispatches, reports still accepted, data kept;
* ``DELETE /experiments/{name}``: only a stopped experiment, by its owner (another process
  redirects, as below); the name can be used again;
* ``POST /experiments/{name}/tokens``, ``DELETE /experiments/{name}/tokens/{token_id}``.

Every other ``/experiments/{name}/...`` path is the experiment's own routes, with the bodies
and answers of ``armlab serve``'s (:func:`~armlab.service.app.experiment_app`), reached with
the admin token or one of the experiment's client tokens
(:class:`~armlab.service.server_access.ServerAccess`).

A request about an experiment that another server process owns (several processes on one
PostgreSQL storage) is answered 307 with ``Location``: the owner's ``--advertise-url`` and
the same path and query, so a client that follows it sends the same method and body there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from armlab._version import __version__
from armlab.log import get_logger
from armlab.service.app import mount_dashboard
from armlab.service.body_limit import BodyLimit
from armlab.service.experiment_configs import ConfigProblems, problem
from armlab.service.host_check import LoopbackHostOnly
from armlab.service.hot_entry import HotEntry
from armlab.service.json_answers import JsonAnswers, with_json_headers
from armlab.service.models import DEFAULT_MAX_BODY
from armlab.service.request_checks import RequestChecks
from armlab.service.server_access import ServerAccess, hash_token, is_experiment_route, new_token
from armlab.service.server_experiments import Experiments, ExperimentUnavailable, OwnedElsewhere
from armlab.storage.base import ExperimentExists, StorageUnavailable, UnknownExperiment, check_name

__all__ = ["create_server_app"]

log = get_logger(__name__)


class CreateIn(BaseModel):
    name: str = Field(description="1-64 characters of letters, digits, '.', '_', '-'; not starting with '.' or '-'")
    config: str | dict[str, Any] = Field(description="the experiment's TOML text, or its tables as a JSON object")


class TokenOut(BaseModel):
    token: str
    token_id: str


#: Seconds a client is asked to wait after a 503 (the storage or a journal cannot be reached or
#: written now; an experiment whose journal failed is opened again by the next request).
RETRY_AFTER = "1"


def _detail(status: int, detail: Any) -> JSONResponse:
    headers = {"Retry-After": RETRY_AFTER} if status == 503 else None
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _to_owner(scope: Scope, moved: OwnedElsewhere) -> RedirectResponse:
    """307 to the same path and query on the process that owns the experiment."""
    query = scope.get("query_string", b"").decode("latin-1")
    location = moved.owner.rstrip("/") + scope["path"] + (f"?{query}" if query else "")
    return RedirectResponse(location, status_code=307)


def retry_after_on_503(send: Send) -> Send:
    """``send``, adding Retry-After to a 503 answer that has none (a journal write that failed)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 503:
            headers = list(message.get("headers", []))
            if not any(name.lower() == b"retry-after" for name, _ in headers):
                message = {**message, "headers": [*headers, (b"retry-after", RETRY_AFTER.encode())]}
        await send(message)

    return sending


def refusal_send(send: Send) -> Send:
    """``send`` with the headers the server's layers add to an experiment route's refusal: the
    Retry-After of a 503 (:class:`_ExperimentRoutes`), then the JSON headers (:class:`JsonAnswers`)."""
    return retry_after_on_503(with_json_headers(send))


class _ExperimentRoutes:
    """``/experiments/{name}/...``: the open experiment's own app (opened on first use)."""

    def __init__(self, experiments: Experiments) -> None:
        self.experiments = experiments

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope["path_params"]["name"]
        try:
            async with self.experiments.use(name) as loaded:
                await loaded.app(scope, receive, retry_after_on_503(send))
        except UnknownExperiment:
            await _detail(404, f"no experiment named {name!r}")(scope, receive, send)
        except OwnedElsewhere as moved:
            await _to_owner(scope, moved)(scope, receive, send)
        except (ExperimentUnavailable, StorageUnavailable) as exc:
            await _detail(503, str(exc))(scope, receive, send)


class _ExperimentsFirst:
    """Send a request for an experiment's own routes straight to ``mount``, past the server's
    exception middleware and router: the same scope as the router gives (``Mount.matches``),
    without the server's per-request machinery, which its ask+tell pairs paid besides the
    experiment app's (``benchmarks/server_throughput.py``).  The innermost middleware: the
    request checks and the body limit have run."""

    def __init__(self, app: ASGIApp, mount: Mount) -> None:
        self.app = app
        self.mount = mount

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_experiment_route(scope["path"]):
            match, child = self.mount.matches(scope)
            if match is Match.FULL:
                await self.mount.handle({**scope, **child}, receive, send)
                return
        await self.app(scope, receive, send)


class _ServerApp(FastAPI):
    """FastAPI with :class:`~armlab.service.hot_entry.HotEntry` before its own layers."""

    entry: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.entry(scope, receive, send)


def create_server_app(
    experiments: Experiments,
    *,
    admin_token: str | None,
    max_body_size: int = DEFAULT_MAX_BODY,
) -> FastAPI:
    """The server's app over ``experiments``; ``admin_token=None``: no authentication (insecure)."""
    storage = experiments.storage
    access = ServerAccess(admin_token, storage.token_hashes(), storage.token_hashes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with experiments.running():
            yield

    app = _ServerApp(title="armlab server", version=__version__, description=__doc__, lifespan=lifespan,
                     docs_url=None, redoc_url=None)
    app.entry = HotEntry(partial(FastAPI.__call__, app), experiments, access, max_body=max_body_size,
                         loopback_only=admin_token is None, refusal_send=refusal_send)
    app.state.experiments = experiments
    mount = Mount("/experiments/{name}", app=_ExperimentRoutes(experiments))
    app.add_middleware(_ExperimentsFirst, mount=mount)
    app.add_middleware(BodyLimit, max_bytes=max_body_size)
    app.add_middleware(RequestChecks, access=access)
    if admin_token is None:
        app.add_middleware(LoopbackHostOnly)
    app.add_middleware(JsonAnswers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [problem(".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body",
                            err.get("msg", "invalid"), "send a JSON object {\"name\": NAME, \"config\": TOML_TEXT}")
                    for err in exc.errors()]
        return _detail(422, problems)

    @app.exception_handler(UnknownExperiment)
    async def unknown(request: Request, exc: UnknownExperiment) -> JSONResponse:
        return _detail(404, str(exc))

    @app.exception_handler(OwnedElsewhere)
    async def elsewhere(request: Request, exc: OwnedElsewhere) -> RedirectResponse:
        return _to_owner(request.scope, exc)

    @app.exception_handler(ExperimentUnavailable)
    @app.exception_handler(StorageUnavailable)
    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        return _detail(503, str(exc))

    def issue_token(name: str) -> TokenOut:
        token, token_id = new_token()
        storage.add_token(name, token_id, hash_token(token))
        access.add(hash_token(token), token_id, name)
        return TokenOut(token=token, token_id=token_id)

    @app.post("/experiments", status_code=201)
    async def create(body: CreateIn) -> Any:
        """Create an experiment from its config; the answer holds its first client token (shown once)."""
        try:
            name = check_name(body.name)
            experiments.create(name, body.config)
        except ConfigProblems as exc:  # before ValueError, which it is too
            return _detail(422, exc.problems)
        except ValueError as exc:
            return _detail(422, [problem("name", str(exc), "choose a name that follows the rule")])
        except ExperimentExists as exc:
            return _detail(409, str(exc))
        log.info("experiment_created", experiment=name)
        token = issue_token(name)
        return {"name": name, **token.model_dump(), "experiment": experiments.summaries_of(name)}

    @app.get("/experiments")
    async def listing() -> dict[str, Any]:
        """Every experiment's summary, sorted by name."""
        return {"experiments": experiments.summaries()}

    @app.get("/experiments/{name}")
    async def summary(name: str) -> dict[str, Any]:
        """One experiment's summary (its journal is opened if it is not open)."""
        async with experiments.use(name) as loaded:
            return experiments.summary_of(loaded)

    @app.post("/experiments/{name}/stop")
    async def stop(name: str) -> dict[str, Any]:
        """Stop dispatching trials; reports of trials already dispatched are still accepted."""
        log.info("experiment_stopped", experiment=name)
        return await experiments.stop(name)

    @app.delete("/experiments/{name}", status_code=204)
    async def delete(name: str) -> Response:
        """Delete a stopped experiment and its journal; its name can be used again."""
        try:
            await experiments.delete(name)
        except ValueError as exc:
            return _detail(409, str(exc))
        access.forget(name)
        log.info("experiment_deleted", experiment=name)
        return Response(status_code=204)

    @app.post("/experiments/{name}/tokens", status_code=201)
    async def add_token(name: str) -> TokenOut:
        """Issue another client token for the experiment (shown once)."""
        storage.get_experiment(name)
        return issue_token(name)

    @app.delete("/experiments/{name}/tokens/{token_id}", status_code=204)
    async def revoke(name: str, token_id: str) -> Response:
        """Revoke a client token: it gets 401 from now on."""
        storage.get_experiment(name)
        if not storage.revoke_token(name, token_id):
            return _detail(404, f"experiment {name!r} has no token {token_id!r}")
        access.revoke(token_id)
        return Response(status_code=204)

    app.router.routes.append(mount)  # what _ExperimentsFirst does not take (another path, a websocket)
    mount_dashboard(app, "experiments.html")  # the list of experiments (dashboard/experiments.js)
    return app
