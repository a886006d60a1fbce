"""The first callable of ``armlab server``'s app: valid asks and tells of an open experiment
answered before FastAPI's and armlab's request layers (a pure ASGI entry point).

Every ask+tell pair of a served experiment is two ``POST /experiments/{name}/ask|tell``
requests, and the layers each request went through before :class:`~armlab.service.hot_routes.HotRoutes`
answered it (FastAPI's error, telemetry and body-limit middleware, then armlab's JSON
answers, request checks, body limit and experiment router, each its own coroutine, a
wrapped ``send`` or a copy of the headers) cost the server's loop more CPU than the
experiment and its journal together (``benchmarks/server_throughput.py``).

:class:`HotEntry` answers a request itself only when every one of those layers would have let
it through unchanged, and gives every other request to the app untouched (a body it read is
replayed), so each refusal keeps its exact answer:

* a ``POST`` to one of the four hot routes of an experiment that is open in this process
  (one that is not is opened, redirected to its owner (307) or refused by the app);
* the Host check of a server without a token (:class:`~armlab.service.host_check.LoopbackHostOnly`),
  the token's access (:class:`~armlab.service.server_access.ServerAccess`: 401/403) and the
  JSON content type (415) pass, as :class:`~armlab.service.request_checks.RequestChecks` decides;
* the body is within ``--max-body`` (:class:`~armlab.service.body_limit.BodyLimit` answers 413);
* the route's model accepts the body (422 otherwise, with the app's message).

The answer is :class:`HotRoutes`'s: the same service calls, bytes and headers as through the
layers (the JSON headers, ``Retry-After`` on a 503), an unexpected error a logged JSON 500.
The request deadline and the connection cap are the server protocol's
(:mod:`armlab.service.connections`), before any app.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from armlab.service.auth import is_loopback
from armlab.service.body_limit import replay
from armlab.service.host_check import host_name
from armlab.service.hot_routes import Route, send_json
from armlab.service.json_answers import internal_error
from armlab.service.request_checks import Access, bearer_token, media_type
from armlab.service.server_experiments import Experiments, Loaded

__all__ = ["HotEntry"]


class HotEntry:
    """Answer valid hot requests of ``experiments`` that are open; give the rest to ``app``.

    ``access``, ``max_body`` and ``loopback_only`` are the rules of the app's own layers
    (``loopback_only``: the server has no token); ``refusal_send(send)`` is ``send`` with the
    headers those layers add to a refusal or an error (the JSON headers, ``Retry-After`` on a 503)."""

    def __init__(self, app: ASGIApp, experiments: Experiments, access: Access, *, max_body: int,
                 loopback_only: bool, refusal_send: Callable[[Send], Send]) -> None:
        self.app = app
        self.refusal_send = refusal_send
        self.experiments = experiments
        self.access = access
        self.max_body = max_body
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            found = self._hot(scope)
        except Exception:  # a check failed unexpectedly: the app's layers run it and answer (a JSON 500)
            found = None
        if found is None:
            await self.app(scope, receive, send)
            return
        loaded, route = found
        loaded.active += 1  # as Experiments.use: not closed while answering
        try:
            await self._answer(scope, receive, send, loaded, route)
        finally:
            loaded.active -= 1

    def _hot(self, scope: Scope) -> tuple[Loaded, Route] | None:
        """The open experiment and the route of a request the entry may answer (from its head)."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        parts = scope["path"].split("/", 3)
        if len(parts) != 4 or parts[1] != "experiments" or parts[0]:
            return None
        loaded = self.experiments.open_now(parts[2])
        route = None if loaded is None else loaded.app.routes.get("/" + parts[3])
        if route is None or not self._head_passes(scope):
            return None
        return loaded, route

    def _head_passes(self, scope: Scope) -> bool:
        """Whether the head passes the app's checks of a head: Host, access, content type, declared size."""
        headers = dict(scope["headers"])
        if self.loopback_only and not is_loopback(host_name(headers.get(b"host", b"").decode("latin-1"))):
            return False
        if self.access.refusal("POST", scope["path"], bearer_token(headers)) is not None:
            return False
        declared = headers.get(b"content-length", b"")
        return media_type(headers) == "application/json" and not (declared.isdigit() and int(declared) > self.max_body)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, loaded: Loaded, route: Route) -> None:
        messages, body = await self._read_body(receive)
        try:
            answer = None if body is None else await loaded.app.answer(scope, route, body)
        except Exception as exc:  # as JsonAnswers: nothing was sent yet
            await internal_error(scope, exc)(scope, receive, self.refusal_send(send))
            return
        if answer is None:  # refused, too large or cut short: the app answers it as it does
            await self.app(scope, replay(messages, receive), send)
        elif isinstance(answer, bytes):
            await send_json(send, answer)
        else:
            await answer(scope, receive, self.refusal_send(send))

    async def _read_body(self, receive: Receive) -> tuple[list[Message], bytes | None]:
        """The messages read and the whole body (None: the client left, or it passed ``max_body``)."""
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages, None
            size += len(message.get("body", b""))
            if size > self.max_body:
                return messages, None
            if not message.get("more_body", False):
                return messages, b"".join(m.get("body", b"") for m in messages)
