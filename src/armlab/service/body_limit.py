"""The service's request-size limit, enforced by armlab itself (a pure ASGI middleware).

A body larger than the limit is answered with 413 and the service's JSON error shape
before the application sees it: at once when ``Content-Length`` declares it, else (a
chunked upload) as soon as the bytes received pass the limit.  A body within the limit is
read whole and handed to the application unchanged; the service's bodies are small JSON
documents, so holding one in memory costs nothing worth counting.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from armlab.service.models import ErrorOut

__all__ = ["BodyLimit", "replay"]


class BodyLimit:
    """Answer 413 to HTTP requests whose body has more than ``max_bytes`` bytes."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                await self.app(scope, replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, replay([whole], receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = (f"request body larger than {self.max_bytes} bytes: send a smaller body "
                  "(the limit is armlab serve --max-body)")
        await JSONResponse(ErrorOut(detail=detail).model_dump(), status_code=413)(scope, receive, send)


def replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that returns ``messages`` first, then whatever ``receive`` returns."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
