"""Connection limits of ``armlab serve``: a header-read timeout and a cap on open connections.

uvicorn closes idle keep-alive connections, but a connection that opens and never sends a
complete request head stays open for good, and enough of them exhaust the process's file
descriptors and lock every client out.  :func:`guarded_protocol` returns uvicorn's HTTP
protocol with two additions:

* a connection whose request head is not complete ``header_timeout`` seconds after it
  opened (or after its previous response, on a kept-alive connection) is closed;
* a connection opened while ``max_connections`` are already open is closed at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT", "DEFAULT_MAX_CONNECTIONS", "guarded_protocol"]

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 1000


def guarded_protocol(header_timeout: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with the header timeout and the connection cap."""
    from uvicorn.protocols.http.h11_impl import H11Protocol  # the web stack loads only when serving

    class GuardedH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()  # the cap: refuse before reading anything
                return
            self._start_head_timer()

        def _start_head_timer(self) -> None:
            self._head_timer = self.loop.call_later(header_timeout, self._head_timed_out)

        def _head_timed_out(self) -> None:
            if self.cycle is None or self.cycle.response_complete:  # no request head yet
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            head_arrived = self.cycle is not None and not self.cycle.response_complete
            if head_arrived and self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():  # kept alive: the next head is timed too
                self._start_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            super().connection_lost(exc)

    return GuardedH11Protocol


def uvicorn_options(header_timeout: float, max_connections: int) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.Config`` that apply these limits."""
    return {"http": guarded_protocol(header_timeout, max_connections), "timeout_keep_alive": 5}
