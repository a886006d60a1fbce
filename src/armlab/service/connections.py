"""Connection limits of ``armlab serve``: a deadline on each request and a cap on open connections.

uvicorn closes idle keep-alive connections, but a connection that opens and never sends a
complete request (its head, or the body its head announced) stays open for good, and
enough of them exhaust the connection cap and the process's file descriptors and lock
every client out.  :func:`guarded_protocol` returns uvicorn's HTTP protocol with two
additions:

* a connection whose request, head *and* body, is not complete ``request_timeout``
  seconds after the connection opened (or after its previous response, on a kept-alive
  connection) is closed;
* a connection opened while ``max_connections`` are already open is closed at once.

A request without a valid token is answered (401) from its head alone, before its body is
read (:mod:`armlab.service.request_checks`), and its connection closed: without the token
nobody holds a connection longer than it takes to send a request head, and with the token
no longer than ``request_timeout``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_MAX_CONNECTIONS", "DEFAULT_REQUEST_TIMEOUT", "guarded_protocol", "uvicorn_options"]

DEFAULT_REQUEST_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 1000


def guarded_protocol(request_timeout: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with the request deadline and the connection cap."""
    from uvicorn.protocols.http.h11_impl import H11Protocol  # the web stack loads only when serving

    class GuardedH11Protocol(H11Protocol):
        _request_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()  # the cap: refuse before reading anything
                return
            self._start_request_timer()

        def _start_request_timer(self) -> None:
            self._request_timer = self.loop.call_later(request_timeout, self._request_timed_out)

        def _request_received(self) -> bool:
            """The current request's head and whole body arrived (and it is not answered yet)."""
            return self.cycle is not None and not self.cycle.response_complete and not self.cycle.more_body

        def _request_timed_out(self) -> None:
            self._request_timer = None
            if not self._request_received():
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self._request_received() and self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self._request_timer is None:  # kept alive: time the next one
                self._start_request_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._request_timer is not None:
                self._request_timer.cancel()
            super().connection_lost(exc)

    return GuardedH11Protocol


def uvicorn_options(request_timeout: float, max_connections: int) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.Config`` that apply these limits."""
    return {"http": guarded_protocol(request_timeout, max_connections), "timeout_keep_alive": 5}
