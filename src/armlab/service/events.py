"""The live event stream: structured-log events copied to server-sent-event subscribers.

:class:`EventHub` is a structlog processor.  The application that runs the service puts it
into the processor chain just before the renderer (:meth:`EventHub.install`), so every
event the experiment logs (trial dispatched/completed/failed, report late, budget spent...)
reaches each subscriber of ``GET /events`` with its bound context, while still being
logged as usual.  Each subscriber has a bounded buffer: a subscriber that cannot keep up
loses events (and is told how many) instead of slowing the experiment down.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from anyio.abc import ObjectReceiveStream, ObjectSendStream

__all__ = ["EventHub", "Subscription", "format_sse"]


@dataclass(eq=False)
class Subscription:
    """One reader of the stream: ``receive`` yields events; ``dropped`` counts lost ones."""

    receive: ObjectReceiveStream[dict[str, Any]]
    send: ObjectSendStream[dict[str, Any]]
    loop: asyncio.AbstractEventLoop
    thread: int
    dropped: int = 0


@dataclass(eq=False)
class EventHub:
    """Fan structlog events out to the subscribers of the event stream."""

    buffer: int = 1000
    _subscribers: list[Subscription] = field(default_factory=list)
    _previous: list[Any] | None = None
    _sequence: int = 0

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if self._subscribers:
            self._sequence += 1
            item = {"id": self._sequence, **event_dict}
            for subscriber in list(self._subscribers):
                if threading.get_ident() == subscriber.thread:
                    self._offer(subscriber, item)
                else:  # an event logged from a worker thread
                    subscriber.loop.call_soon_threadsafe(self._offer, subscriber, item)
        return event_dict

    @staticmethod
    def _offer(subscriber: Subscription, item: dict[str, Any]) -> None:
        try:
            subscriber.send.send_nowait(item)
        except anyio.WouldBlock:
            subscriber.dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the subscriber just left

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        """Receive every event logged while the context is open."""
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](self.buffer)
        subscriber = Subscription(receive, send, asyncio.get_running_loop(), threading.get_ident())
        self._subscribers.append(subscriber)
        try:
            with send, receive:
                yield subscriber
        finally:
            self._subscribers.remove(subscriber)

    def install(self) -> None:
        """Insert the hub before the last processor (the renderer) of structlog's configuration."""
        processors = list(structlog.get_config()["processors"])
        self._previous = processors
        structlog.configure(processors=[*processors[:-1], self, processors[-1]])

    def uninstall(self) -> None:
        """Restore the processor chain :meth:`install` changed."""
        if self._previous is not None:
            structlog.configure(processors=self._previous)
            self._previous = None


def format_sse(item: dict[str, Any]) -> str:
    """One server-sent event: ``id``, ``event`` (the log event's name) and JSON ``data``."""
    data = json.dumps(item, default=str, separators=(",", ":"))
    name = " ".join(str(item.get("event", "log")).split())  # one line, as the format requires
    return f"id: {item.get('id', '')}\nevent: {name}\ndata: {data}\n\n"
