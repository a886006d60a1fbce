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
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from armlab.service.body_limit import replay
from armlab.service.json_answers import JSON_HEADERS
from armlab.service.models import AskBatchIn, AskIn, TellBatchIn, tell_model
from armlab.service.service import Service

__all__ = ["HotRoutes", "Route", "read_body", "send_json"]

_Handler = Callable[[Request, Exception], Awaitable[Response]]
#: A hot route: the model of its body and the service call that answers it.
Route = tuple[type[BaseModel], Callable[[Any], Awaitable[dict[str, Any]]]]


class HotRoutes:
    """Answer valid ``POST /ask``, ``/tell`` and their batches directly; pass the rest to ``app``.

    ``handlers``: the app's exception handlers (type -> handler), which answer the service's
    refusals (409 no trial, 404 unknown trial, 422 rejected reward, 503 journal failure).
    """

    def __init__(self, app: ASGIApp, service: Service, handlers: Mapping[Any, _Handler]) -> None:
        self.app = app
        self.handlers = handlers
        experiment = service.experiment
        self.routes: dict[str, Route] = {
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
        messages, body = await read_body(receive)
        answer = None if body is None else await self.answer(scope, route, body)
        if answer is None:  # the app answers it, with its own message
            await self.app(scope, replay(messages, receive), send)
        elif isinstance(answer, bytes):
            await send_json(send, answer)
        else:
            await answer(scope, receive, send)

    async def answer(self, scope: Scope, route: Route, body: bytes) -> bytes | Response | None:
        """The answer of a request of ``route`` with ``body``: the JSON of its answer's fields
        (200), the app's handler's answer to the service's refusal, or None when the route's
        model refuses the body (nothing done; the app's own route answers it)."""
        model, call = route
        try:
            fields = model.model_validate(json.loads(body))
        except (ValueError, RecursionError):  # not JSON, or refused by the model (a ValidationError)
            return None
        try:
            return _ENCODE(await call(fields)).encode()  # the answer's fields, JSON-ready
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            return await handler(Request(scope), exc)

    def _handler(self, exc: Exception) -> _Handler | None:
        for kind in type(exc).__mro__:
            if kind in self.handlers:
                return self.handlers[kind]
        return None


#: JSON as :class:`~starlette.responses.JSONResponse` renders it (the same bytes).
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode

#: The headers of a JSON answer after the service's own (:mod:`armlab.service.json_answers`).
_JSON_HEADERS = [(b"content-type", b"application/json"),
                 *((name.lower().encode(), value.encode()) for name, value in JSON_HEADERS.items())]


async def send_json(send: Send, body: bytes) -> None:
    """Send ``body`` as a 200 JSON answer, with the headers and in the order that a
    :class:`~starlette.responses.JSONResponse` passed through
    :class:`~armlab.service.json_answers.JsonAnswers` has."""
    headers = [(b"content-length", str(len(body)).encode()), *_JSON_HEADERS]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _route_path(scope: Scope) -> str:
    """The path inside the app (``armlab server`` mounts an experiment's app under a prefix)."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root + "/") else path


async def read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages read and the whole body (None: the client left before it was sent)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)
