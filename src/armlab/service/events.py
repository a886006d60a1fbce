"""The live event stream: an experiment's typed events copied to ``GET /events`` subscribers.

:class:`EventHub` is an experiment listener (:data:`armlab.events.Listener`): registered
with ``experiment.add_listener(hub)``, it turns each :class:`~armlab.events.ExperimentEvent`
into one server-sent event frame (``event``: its kind, ``id``: a sequence number, ``data``:
``event.to_dict()`` as JSON), encoded once and offered to every subscriber as the same
bytes, so an event costs one encoding whatever the number of readers.  It does not depend
on how (or whether) logging is configured.  Each subscriber has a bounded buffer: a
subscriber that cannot keep up loses events (and is told how many) instead of slowing the
experiment down; at most ``max_subscribers`` read at once (:class:`TooManySubscribers`).

An event only fills the buffers; it wakes no subscriber.  The hub wakes them all
:data:`FLUSH_INTERVAL` after the first event it has not announced yet, a subscriber whose
buffer is full at once, and all of them at once when :meth:`EventHub.flush` is called (``/status`` does, so the events before its answer reach
the readers first): waking a task and writing to its socket cost far more than an event,
and a busy experiment pays them about ``1 / FLUSH_INTERVAL`` times a second per reader
instead of once per event and reader (``benchmarks/events_fanout.py``).
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

__all__ = ["DEFAULT_MAX_SUBSCRIBERS", "FLUSH_INTERVAL", "EventHub", "Subscription", "TooManySubscribers",
           "encode_event"]

#: Readers of ``/events`` at most, by default (``armlab serve --max-subscribers``).
DEFAULT_MAX_SUBSCRIBERS = 200
#: Seconds an event waits, at most, before the subscribers are woken to write it.
FLUSH_INTERVAL = 0.25


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
    """One reader of the stream: ``receive`` yields encoded frames; ``dropped`` counts lost ones;
    ``woken`` is set when the hub asks it to write what its buffer holds."""

    receive: ObjectReceiveStream[bytes]
    send: ObjectSendStream[bytes]
    loop: asyncio.AbstractEventLoop
    thread: int
    dropped: int = 0
    woken: anyio.Event = field(default_factory=anyio.Event)

    async def wait_woken(self) -> None:
        """Wait until the hub wakes this reader (at once if it did meanwhile), then re-arm."""
        if not self.woken.is_set():  # a set event would still yield to the loop
            await self.woken.wait()
        self.woken = anyio.Event()


@dataclass(eq=False)
class EventHub:
    """Fan an experiment's events out to the subscribers of the event stream."""

    buffer: int = 1000
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS
    _subscribers: list[Subscription] = field(default_factory=list)
    _sequence: int = 0
    _flush_timers: dict[asyncio.AbstractEventLoop, asyncio.TimerHandle] = field(default_factory=dict)

    def wants_events(self) -> bool:
        """Whether an event would reach anyone: the experiment builds none while nobody reads
        (events are numbered only while someone reads, so the numbering is the same)."""
        return bool(self._subscribers)

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

    @property
    def sequence(self) -> int:
        """The ``id`` of the last frame sent (events are numbered only while someone reads)."""
        return self._sequence

    def _offer(self, subscriber: Subscription, frame: bytes) -> None:
        try:
            subscriber.send.send_nowait(frame)
        except anyio.WouldBlock:
            subscriber.dropped += 1
            subscriber.woken.set()  # a full buffer is written at once, not after the interval
            return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the subscriber just left
        if subscriber.loop not in self._flush_timers:
            self._flush_timers[subscriber.loop] = subscriber.loop.call_later(FLUSH_INTERVAL, self.flush)

    def flush(self) -> None:
        """Wake every subscriber to write its buffered frames now (call it from their event loop)."""
        for timer in self._flush_timers.values():
            timer.cancel()
        self._flush_timers.clear()
        for subscriber in self._subscribers:
            subscriber.woken.set()

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
