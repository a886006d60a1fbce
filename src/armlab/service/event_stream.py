"""``GET /events`` as an ASGI response: the hub's encoded frames, written as they come.

Every subscriber is one task on the service's event loop, so what each costs per event is
paid as many times as there are readers.  The frames come encoded from the hub (once per
event, :mod:`armlab.service.events`), and a subscriber sleeps until the hub wakes it (at
most ``FLUSH_INTERVAL`` after an event, or at once before a ``/status`` answer) and then
writes every frame waiting in its buffer in one write: one task hop and one write per
wake, however many events arrived meanwhile.  An event emitted before a ``/status`` answer
reaches the reader before that answer, which the dashboard's chart relies on.
"""

from __future__ import annotations

import anyio
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from armlab.service.events import EventHub, Subscription, TooManySubscribers
from armlab.service.models import ErrorOut

__all__ = ["KEEPALIVE_INTERVAL", "EventStreamResponse"]

#: Seconds of silence after which a keep-alive comment is sent (the client's read timeout is 60).
KEEPALIVE_INTERVAL = 15.0

_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"), (b"x-content-type-options", b"nosniff")]


class EventStreamResponse(Response):
    """Subscribe to ``hub`` and stream its frames until the client leaves (503 when full)."""

    media_type = "text/event-stream"

    def __init__(self, hub: EventHub) -> None:
        super().__init__()
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            with self.hub.subscribe() as subscription:  # raises only on entry, when full
                await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_until_disconnect, receive, tg.cancel_scope)
                    await _stream(subscription, send)
        except TooManySubscribers as exc:
            await JSONResponse(ErrorOut(detail=str(exc)).model_dump(), status_code=503,
                               headers={"Retry-After": "5"})(scope, receive, send)


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _stream(subscription: Subscription, send: Send) -> None:
    """Write the frames as they come, those waiting together; a comment says when
    the reader connected, how many events it lost, and that it is alive after a silence."""
    await send({"type": "http.response.body", "body": b": connected\n\n", "more_body": True})
    reported_drops = 0
    while True:
        with anyio.move_on_after(KEEPALIVE_INTERVAL):
            await subscription.wait_woken()
        frames: list[bytes] = []
        _drain(subscription, frames)
        if not frames:
            await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})
            continue
        if subscription.dropped > reported_drops:
            reported_drops = subscription.dropped
            frames.insert(0, f": {reported_drops} events dropped (reader too slow)\n\n".encode())
        await send({"type": "http.response.body", "body": b"".join(frames), "more_body": True})


def _drain(subscription: Subscription, frames: list[bytes]) -> None:
    """Move the frames waiting in the subscription's buffer to ``frames``."""
    while True:
        try:
            frames.append(subscription.receive.receive_nowait())
        except anyio.WouldBlock:
            return
