"""The live event stream: an experiment's typed events copied to ``GET /events`` subscribers.

:class:`EventHub` is an experiment listener (:data:`armlab.events.Listener`): registered
with ``experiment.add_listener(hub)``, it turns each :class:`~armlab.events.ExperimentEvent`
into one server-sent event frame (``event``: its kind, ``id``: a sequence number, ``data``:
``event.to_dict()`` as JSON), encoded once and offered to every subscriber as the same
bytes, so an event costs one encoding whatever the number of readers.  It does not depend
on how (or whether) logging is configured.  Each subscriber has a bounded buffer: a
subscriber that cannot keep up loses events (and is told how many) instead of slowing the
experiment down; at most ``max_subscribers`` read at once (:class:`TooManySubscribers`).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from armlab.events import ExperimentEvent

__all__ = ["DEFAULT_MAX_SUBSCRIBERS", "EventHub", "Subscription", "TooManySubscribers", "encode_event"]

#: Readers of ``/events`` at most, by default (``armlab serve --max-subscribers``).
DEFAULT_MAX_SUBSCRIBERS = 200


class TooManySubscribers(Exception):
    """Every subscriber slot is taken (the service answers 503)."""


def _json_ready(value: Any) -> Any:
    """``value`` with non-finite floats as None (JSON has no NaN or infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def encode_event(sequence: int, event: ExperimentEvent) -> bytes:
    """The server-sent event frame of ``event``, numbered ``sequence``."""
    data = {"id": sequence, **{key: _json_ready(value) for key, value in event.to_dict().items()}}
    return f"event: {event.kind}\nid: {sequence}\ndata: {json.dumps(data)}\n\n".encode()


@dataclass(eq=False)
class Subscription:
    """One reader of the stream: ``receive`` yields encoded frames; ``dropped`` counts lost ones."""

    receive: ObjectReceiveStream[bytes]
    send: ObjectSendStream[bytes]
    loop: asyncio.AbstractEventLoop
    thread: int
    dropped: int = 0


@dataclass(eq=False)
class EventHub:
    """Fan an experiment's events out to the subscribers of the event stream."""

    buffer: int = 1000
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS
    _subscribers: list[Subscription] = field(default_factory=list)
    _sequence: int = 0

    def __call__(self, event: ExperimentEvent) -> None:
        if not self._subscribers:
            return
        self._sequence += 1
        frame = encode_event(self._sequence, event)
        here = threading.get_ident()
        for subscriber in list(self._subscribers):
            if here == subscriber.thread:
                self._offer(subscriber, frame)
            else:  # the experiment is driven from another thread than the stream's
                subscriber.loop.call_soon_threadsafe(self._offer, subscriber, frame)

    @staticmethod
    def _offer(subscriber: Subscription, frame: bytes) -> None:
        try:
            subscriber.send.send_nowait(frame)
        except anyio.WouldBlock:
            subscriber.dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the subscriber just left

    @contextmanager
    def subscribe(self) -> Iterator[Subscription]:
        """Receive every event emitted while the context is open; raise
        :class:`TooManySubscribers` when ``max_subscribers`` are reading already."""
        if len(self._subscribers) >= self.max_subscribers:
            raise TooManySubscribers(
                f"{len(self._subscribers)} readers of /events already, the most this service allows: "
                "try again later, or restart it with a larger armlab serve --max-subscribers"
            )
        send, receive = anyio.create_memory_object_stream[bytes](self.buffer)
        subscriber = Subscription(receive, send, asyncio.get_running_loop(), threading.get_ident())
        self._subscribers.append(subscriber)
        try:
            with send, receive:
                yield subscriber
        finally:
            self._subscribers.remove(subscriber)
