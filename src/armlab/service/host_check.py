"""Refuse requests for other host names while the service runs without a token.

An ``--insecure`` service listens on loopback only, but a web page the user opens can
still reach it: DNS rebinding points an attacker's name at 127.0.0.1, and the browser then
sends requests with ``Host: attacker.example``.  Checking that the Host header names a
loopback address (``localhost``, ``127.x.y.z``, ``[::1]``, with any port) closes that door.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from armlab.service.auth import is_loopback
from armlab.service.models import ErrorOut

__all__ = ["LoopbackHostOnly"]


def host_name(header: str) -> str:
    """The name part of a Host header: ``[::1]:8000`` -> ``::1``, ``localhost:80`` -> ``localhost``."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class LoopbackHostOnly:
    """Answer 421 to HTTP requests whose Host header is not a loopback name."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not is_loopback(host_name(host)):
                detail = (f"Host {host!r} is not a loopback name; a service without a token answers only "
                          "requests for localhost, 127.0.0.1 or [::1]")
                await JSONResponse(ErrorOut(detail=detail).model_dump(), status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)
