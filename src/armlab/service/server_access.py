"""Who may call which route of ``armlab server``: the admin token and per-experiment client tokens.

* The admin token (``ARMLAB_ADMIN_TOKEN`` or ``--admin-token-file``) works on every route.
* A client token is issued for one experiment (``POST /experiments``, ``POST
  /experiments/{name}/tokens``) and works on that experiment's routes
  (``/experiments/{name}/...``) and on ``GET /experiments/{name}``; on another experiment's
  routes, and on the admin routes, it gets 403.
* No token, or one that is neither: 401.  The dashboard's files and the API schema are public.

Client tokens are kept only as SHA-256 hashes (in the storage's catalog and here, in memory,
so a request seldom waits for the catalog); the admin token is compared in constant time.
Several server processes may share one storage: a process reads the catalog's hashes again
when a token it does not know comes (at most once a second) and every :data:`RELOAD_EVERY`
seconds, so a token issued by another process works at once and one revoked there stops
working here within that time.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

from armlab.service.auth import token_matches
from armlab.service.request_checks import is_public

__all__ = ["ServerAccess", "hash_token", "is_experiment_route", "new_token"]

#: The parts of ``/experiments/{name}/...`` that are the admin's, not the experiment's clients'.
_ADMIN_PARTS = ("stop", "tokens")

#: Seconds between two readings of the catalog's token hashes: at most after a token this
#: process does not know, always after :data:`RELOAD_EVERY`.
RELOAD_AFTER_MISS, RELOAD_EVERY = 1.0, 30.0


def hash_token(token: str) -> str:
    """The hex SHA-256 of ``token``: all that is ever stored of a client token."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> tuple[str, str]:
    """A new client token and its id (the id names it for revocation; it grants nothing)."""
    return secrets.token_urlsafe(32), secrets.token_hex(8)


class ServerAccess:
    """The access rules of ``armlab server`` (an :class:`~armlab.service.request_checks.Access`).

    ``admin_token=None``: no token is required at all (an ``--insecure`` server, loopback only).
    ``hashes``: ``{token hash: (token id, experiment)}``, as the storage returns them;
    ``reload``: returns them again from the storage (None: never; see the module docstring).
    """

    def __init__(self, admin_token: str | None, hashes: dict[str, tuple[str, str]],
                 reload: Callable[[], dict[str, tuple[str, str]]] | None = None) -> None:
        self.admin_token = admin_token
        self._clients = dict(hashes)
        self._reload = reload
        self._loaded_at = time.monotonic()
        self._missed_at = float("-inf")  # when an unknown token last made it read the catalog

    def add(self, token_hash: str, token_id: str, experiment: str) -> None:
        self._clients[token_hash] = (token_id, experiment)

    def revoke(self, token_id: str) -> None:
        self._clients = {h: entry for h, entry in self._clients.items() if entry[0] != token_id}

    def forget(self, experiment: str) -> None:
        """Drop every token of a deleted experiment."""
        self._clients = {h: entry for h, entry in self._clients.items() if entry[1] != experiment}

    def experiment_of(self, token: str) -> str | None:
        """The experiment a client token is for (None: not a client token): one hash lookup of
        the token's SHA-256.  The lookup's time depends only on the digest, which tells nothing
        about the tokens stored (finding a token from a digest means inverting SHA-256)."""
        digest = hash_token(token)
        entry = self._clients.get(digest)
        now = time.monotonic()
        missed = entry is None and now - self._missed_at > RELOAD_AFTER_MISS
        if self._reload is not None and (missed or now - self._loaded_at > RELOAD_EVERY):
            self._missed_at = now if missed else self._missed_at
            self._reload_hashes()
            entry = self._clients.get(digest)
        return None if entry is None else entry[1]

    def _reload_hashes(self) -> None:
        from armlab.storage.base import StorageUnavailable

        assert self._reload is not None
        self._loaded_at = time.monotonic()
        try:
            self._clients = dict(self._reload())
        except StorageUnavailable:
            pass  # the database is away: keep what we know (its routes answer 503 anyway)

    def refusal(self, method: str, path: str, token: str | None) -> tuple[int, str] | None:
        if self.admin_token is None or _public(path):
            return None
        if token is not None and token_matches(self.admin_token, token):
            return None
        experiment = self.experiment_of(token) if token is not None else None
        if experiment is None:
            return 401, "missing or wrong bearer token"
        if _client_may(method, path, experiment):
            return None
        return 403, f"this token is for experiment {experiment!r} only: it may not use {method} {path}"


def _split(path: str) -> tuple[str | None, str | None]:
    """``(name, rest)`` of ``/experiments/{name}[/rest]``; ``(None, None)`` for other paths."""
    parts = path.split("/", 3)
    if len(parts) < 3 or parts[0] or parts[1] != "experiments" or not parts[2]:
        return None, None
    return parts[2], (parts[3] if len(parts) == 4 else None)


def is_experiment_route(path: str) -> bool:
    """Whether ``path`` is one of an experiment's own routes (``/experiments/{name}/REST``, not
    the admin's ``stop`` and ``tokens``): what the experiment's app answers."""
    _, rest = _split(path)
    return bool(rest) and rest.split("/", 1)[0] not in _ADMIN_PARTS  # type: ignore[union-attr]


def _public(path: str) -> bool:
    """The dashboard's files: ``/``, ``/dashboard/...`` and each experiment's page and files."""
    if is_public(path):
        return True
    _, rest = _split(path)
    return rest is not None and (rest == "" or is_public("/" + rest))


def _client_may(method: str, path: str, experiment: str) -> bool:
    name, rest = _split(path)
    if name != experiment:
        return False
    if rest is None:
        return method == "GET"  # its own summary
    return rest.split("/", 1)[0] not in _ADMIN_PARTS
