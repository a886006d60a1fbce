"""The live event stream: an experiment's typed events copied to ``GET /events`` subscribers.

:class:`EventHub` is an experiment listener (:data:`armlab.events.Listener`): registered
with ``experiment.add_listener(hub)``, it turns each :class:`~armlab.events.ExperimentEvent`
into its JSON form (``event.to_dict()``) plus a sequence ``id`` and offers it to every
subscriber.  It does not depend on how (or whether) logging is configured.  Each subscriber
has a bounded buffer: a subscriber that cannot keep up loses events (and is told how many)
instead of slowing the experiment down.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from armlab.events import ExperimentEvent

__all__ = ["EventHub", "Subscription"]


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
    """Fan an experiment's events out to the subscribers of the event stream."""

    buffer: int = 1000
    _subscribers: list[Subscription] = field(default_factory=list)
    _sequence: int = 0

    def __call__(self, event: ExperimentEvent) -> None:
        if not self._subscribers:
            return
        self._sequence += 1
        item = {"id": self._sequence, **event.to_dict()}
        for subscriber in list(self._subscribers):
            if threading.get_ident() == subscriber.thread:
                self._offer(subscriber, item)
            else:  # the experiment is driven from another thread than the stream's
                subscriber.loop.call_soon_threadsafe(self._offer, subscriber, item)

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
        """Receive every event emitted while the context is open."""
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](self.buffer)
        subscriber = Subscription(receive, send, asyncio.get_running_loop(), threading.get_ident())
        self._subscribers.append(subscriber)
        try:
            with send, receive:
                yield subscriber
        finally:
            self._subscribers.remove(subscriber)
