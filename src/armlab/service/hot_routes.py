"""``POST /ask``, ``/tell``, ``/ask/batch`` and ``/tell/batch`` answered without FastAPI's per-request machinery.

Every ask+tell pair of a served experiment goes through these two routes, and FastAPI's
generic path (an exception middleware and an exit stack per request, dependency solving,
the answer validated against its model again before it is encoded) cost more server CPU
than the experiment and its journal together (``benchmarks/server_throughput.py``), and a
batch's answer was validated again item by item.
:class:`HotRoutes`, the innermost middleware of an experiment's app, answers a *valid* request
of these routes itself: the same body models (so the same fields are accepted), the same
:class:`~armlab.service.service.Service` calls (turn -> change -> durable: the answer still
waits until the change is in the journal), the same answers and the app's own error handlers.

Every request it does not answer goes on to the app unchanged, its body replayed: other
routes, and every body the models refuse, so each refusal keeps its exact answer (422 with the
app's message).  It runs inside the request checks and the body limit, which have answered
401/403/413/415 before it sees a request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from armlab.service.body_limit import replay
from armlab.service.models import AskBatchIn, AskIn, TellBatchIn, tell_model
from armlab.service.service import Service

__all__ = ["HotRoutes"]

_Handler = Callable[[Request, Exception], Awaitable[Response]]


class HotRoutes:
    """Answer valid ``POST /ask``, ``/tell`` and their batches directly; pass the rest to ``app``.

    ``handlers``: the app's exception handlers (type -> handler), which answer the service's
    refusals (409 no trial, 404 unknown trial, 422 rejected reward, 503 journal failure).
    """

    def __init__(self, app: ASGIApp, service: Service, handlers: Mapping[Any, _Handler]) -> None:
        self.app = app
        self.handlers = handlers
        experiment = service.experiment
        self.routes: dict[str, tuple[type[BaseModel], Callable[[Any], Awaitable[dict[str, Any]]]]] = {
            "/ask": (AskIn, service.answer_ask),
            "/tell": (tell_model(experiment.problem.reward_range), service.answer_tell),
            "/ask/batch": (AskBatchIn, service.answer_ask_batch),
            "/tell/batch": (TellBatchIn, service.answer_tell_batch),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.routes.get(_route_path(scope)) if scope["type"] == "http" and scope["method"] == "POST" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        messages, body = await _read_body(receive)
        model, call = route
        try:
            fields = None if body is None else model.model_validate(json.loads(body))
        except (ValueError, RecursionError):  # not JSON, or refused by the model (a ValidationError)
            fields = None
        if fields is None:  # the app answers it, with its own message
            await self.app(scope, replay(messages, receive), send)
            return
        try:
            response: Response = JSONResponse(await call(fields))  # the answer's fields, JSON-ready
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(Request(scope), exc)
        await response(scope, receive, send)

    def _handler(self, exc: Exception) -> _Handler | None:
        for kind in type(exc).__mro__:
            if kind in self.handlers:
                return self.handlers[kind]
        return None


def _route_path(scope: Scope) -> str:
    """The path inside the app (``armlab server`` mounts an experiment's app under a prefix)."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root + "/") else path


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages read and the whole body (None: the client left before it was sent)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)
