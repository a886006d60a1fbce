"""Refuse a request from its head alone, before a byte of its body is read (a pure ASGI middleware).

Two checks run on the request head and answer at once, so a client cannot hold a
connection (one of ``--max-connections``) by announcing a body it never sends:

* the bearer token (401), when the service has one: every route but the public ones
  (the dashboard's files and the OpenAPI schema, which hold no data); ``armlab server``
  passes its own rules instead (an :class:`Access`: admin and per-experiment tokens, 403);
* the content type of a state-changing request (415): every ``POST`` must say
  ``Content-Type: application/json``.  A web page can send a "simple" cross-origin
  request (no preflight) only with a form or text content type, so this keeps other
  pages from dispatching trials on an ``--insecure`` service.

A refusal closes its connection (``Connection: close``): the body was not read, so the
connection cannot carry a next request.
"""

from __future__ import annotations

from typing import Protocol

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from armlab.service.auth import token_matches
from armlab.service.models import ErrorOut

__all__ = ["PUBLIC_PATHS", "Access", "RequestChecks", "TokenAccess", "bearer_token"]

#: Paths answered without a token: the dashboard's files (no data) and the API's schema.
PUBLIC_PATHS = ("/", "/openapi.json")
_PUBLIC_PREFIX = "/dashboard"


def is_public(path: str) -> bool:
    """True for the paths answered without a token (:data:`PUBLIC_PATHS`, the dashboard)."""
    return path in PUBLIC_PATHS or path == _PUBLIC_PREFIX or path.startswith(_PUBLIC_PREFIX + "/")


def media_type(headers: dict[bytes, bytes]) -> str:
    """The Content-Type header without its parameters, lower case (``""`` when absent)."""
    return headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()


class Access(Protocol):
    """Who may send a request: ``refusal`` answers ``(status, detail)`` to refuse it, else None."""

    def refusal(self, method: str, path: str, token: str | None) -> tuple[int, str] | None: ...


class TokenAccess:
    """``armlab serve``'s rule: one token for every route but the public ones (None: no token)."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    def refusal(self, method: str, path: str, token: str | None) -> tuple[int, str] | None:
        if self.token is None or is_public(path):
            return None
        if token is None or not token_matches(self.token, token):
            return 401, "missing or wrong bearer token"
        return None


def bearer_token(headers: dict[bytes, bytes]) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, or None."""
    scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


class RequestChecks:
    """Answer 401/403 (the ``access`` rules) and 415 (a POST not declared JSON) before the body is read.

    ``token``: ``armlab serve``'s single token (None: none is required, an ``--insecure``
    service); ``access`` replaces it with other rules.  The content type is checked all the same.
    """

    def __init__(self, app: ASGIApp, token: str | None = None, access: Access | None = None) -> None:
        self.app = app
        self.access = access if access is not None else TokenAccess(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers = dict(scope["headers"])
        refused = self.access.refusal(scope["method"], scope["path"], bearer_token(headers))
        if refused is not None:
            status, detail = refused
            return _refuse(status, detail, {"WWW-Authenticate": "Bearer"} if status == 401 else None)
        if scope["method"] == "POST" and media_type(headers) != "application/json":
            given_type = media_type(headers) or "none"
            detail = (f"a POST to {scope['path']} must be JSON: send the header 'Content-Type: application/json' "
                      f"(got {given_type}), with a JSON body ({{}} for no fields)")
            return _refuse(415, detail)
        return None


def _refuse(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The refusal, closing the connection: the body was not read, so no next request can follow it."""
    return JSONResponse(ErrorOut(detail=detail).model_dump(), status_code=status,
                        headers={**(headers or {}), "Connection": "close"})
