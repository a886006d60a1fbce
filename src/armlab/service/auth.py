"""Who may talk to the service: a bearer token, and where it may listen.

The token comes from the environment variable ``ARMLAB_TOKEN`` or from a file (first line).
Without one the service refuses to start, unless ``--insecure`` is given *and* it binds a
loopback address; ``--insecure`` on any other address is refused too.  A token file must
be private to its owner (mode 600).  Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from pathlib import Path

from armlab.errors import ConfigError

__all__ = ["MIN_TOKEN_LENGTH", "TOKEN_ENV", "is_loopback", "resolve_token", "token_matches"]

TOKEN_ENV = "ARMLAB_TOKEN"
MIN_TOKEN_LENGTH = 16


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(host: str, token_file: str | Path | None, insecure: bool, env: str = TOKEN_ENV,
                  file_option: str = "--token-file") -> str | None:
    """The token to require (from ``token_file``, else ``$env``), or None for an insecure
    loopback service; raise ConfigError otherwise."""
    token = None
    if token_file is not None:
        _require_private(Path(token_file))
        try:
            lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {str(token_file)!r}: {exc.strerror or exc}") from None
        token = lines[0].strip() if lines else ""
        where = f"the token file {str(token_file)!r}"
    elif os.environ.get(env):
        token = os.environ[env].strip()
        where = f"${env}"
    if insecure:
        if not is_loopback(host):
            raise ConfigError(
                f"--insecure serves without a token and is only allowed on loopback addresses, not {host!r}"
            )
        return None
    if token is None:
        raise ConfigError(
            f"the service needs a bearer token: set {env} or pass {file_option} FILE "
            "(or --insecure, loopback only)"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(f"the token from {where} is too short: use at least {MIN_TOKEN_LENGTH} characters")
    return token


def _require_private(path: Path) -> None:
    """Refuse a token file that other users may read or write (like ssh does with keys)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"cannot read the token file {str(path)!r}: {exc.strerror or exc}") from None
    if mode & 0o077:
        raise ConfigError(
            f"the token file {str(path)!r} is accessible to other users (mode {mode & 0o777:o}); "
            f"make it private: chmod 600 {path}"
        )


def token_matches(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode(), given.encode())
