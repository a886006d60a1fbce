"""Every answer of the service's API as JSON, with headers that keep browsers from misusing it
(a pure ASGI middleware, the outermost one of the app).

* JSON answers carry ``X-Content-Type-Options: nosniff`` (a browser never reads them as
  another type) and ``Cache-Control: no-store`` (experiment data and tokens' answers stay
  out of caches);
* an unexpected error answers a JSON 500 (the service's error shape) and is logged, and
  the connection stays usable: without this the error would propagate to the server,
  which resets a kept-alive connection.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from armlab.log import get_logger
from armlab.service.models import ErrorOut

__all__ = ["JSON_HEADERS", "JsonAnswers"]

log = get_logger(__name__)

#: Added to every answer whose content type is JSON.
JSON_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


class JsonAnswers:
    """Add :data:`JSON_HEADERS` to JSON answers; answer unexpected errors with a JSON 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith("application/json"):
                    headers.update(JSON_HEADERS)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # anything the routes' own handlers did not answer
            log.error("request_failed", method=scope["method"], path=scope["path"], error=repr(exc), exc_info=exc)
            if started:
                raise  # half an answer went out: only closing the connection can end it
            detail = f"internal error of the service ({type(exc).__name__}); it is logged, the request can be retried"
            await JSONResponse(ErrorOut(detail=detail).model_dump(), status_code=500)(scope, receive, send_with_headers)
