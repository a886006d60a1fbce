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

__all__ = ["JSON_HEADERS", "JsonAnswers", "add_json_headers", "internal_error", "with_json_headers"]

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
                add_json_headers(message)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # anything the routes' own handlers did not answer
            if started:
                log_failure(scope, exc)
                raise  # half an answer went out: only closing the connection can end it
            await internal_error(scope, exc)(scope, receive, send_with_headers)


def add_json_headers(start: Message) -> None:
    """Add :data:`JSON_HEADERS` to an ``http.response.start`` message whose content type is JSON."""
    headers = MutableHeaders(scope=start)
    if headers.get("content-type", "").startswith("application/json"):
        headers.update(JSON_HEADERS)


def with_json_headers(send: Send) -> Send:
    """``send``, adding :data:`JSON_HEADERS` to a JSON answer."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            add_json_headers(message)
        await send(message)

    return sending


def log_failure(scope: Scope, exc: Exception) -> None:
    log.error("request_failed", method=scope["method"], path=scope["path"], error=repr(exc), exc_info=exc)


def internal_error(scope: Scope, exc: Exception) -> JSONResponse:
    """The JSON 500 of an unexpected error (logged): the service's error shape, without the
    :data:`JSON_HEADERS` (the sender adds them)."""
    log_failure(scope, exc)
    detail = f"internal error of the service ({type(exc).__name__}); it is logged, the request can be retried"
    return JSONResponse(ErrorOut(detail=detail).model_dump(), status_code=500)
