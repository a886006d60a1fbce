"""``armlab serve`` (the ask/tell HTTP service) and ``armlab resume`` (continue from a journal)."""

from __future__ import annotations

import socket
import sys
from urllib.parse import urlsplit
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TextIO

import anyio
import click

from armlab.cli.answers import describe_recommendation
from armlab.cli.app import App
from armlab.cli.errors import UserError, user_errors
from armlab.extras import require
from armlab.log import configure_logging, log_event
from armlab.orchestrator.live.session import LiveSession
from armlab.service.auth import TOKEN_ENV, is_loopback
from armlab.service.collector import serving_collector
from armlab.storage.url import DEFAULT_STORAGE
from armlab.service.connections import DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT, uvicorn_options
from armlab.service.events import DEFAULT_MAX_SUBSCRIBERS
from armlab.service.models import DEFAULT_MAX_BODY, DEFAULT_MAX_LOADED

ADMIN_TOKEN_ENV = "ARMLAB_ADMIN_TOKEN"

__all__ = ["resume_command", "retire_command", "safety_options", "serve_command", "server_command"]

_LOG_HELP = "Write JSON-lines events to this file (default: stderr)."


def _configure_logs(stack: ExitStack, log_path: str | None) -> None:
    if log_path is None:
        configure_logging(json=None if sys.stderr.isatty() else True)
        return
    stream: TextIO = stack.enter_context(open(log_path, "a", encoding="utf-8"))  # noqa: SIM115
    configure_logging(stream=stream, json=True)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it every keep-alive answer waits ~40 ms for a delayed ACK (Nagle)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)  # queue clients that connect before the server loop starts
    return sock


def _quiet_exit_server(config: Any) -> Any:
    """A uvicorn server that ends normally after SIGINT/SIGTERM (no re-raised signal), so
    the service can print its final state and exit with status 0 after a graceful stop."""
    import uvicorn

    class QuietExitServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                self._captured_signals.clear()

    return QuietExitServer(config)


def _outcome_line(session: LiveSession) -> str:
    s = session.experiment.summary()
    return (
        f"{session.label}: {session.experiment.state.value}; {len(session.experiment.trials)} dispatched, "
        f"{s['completed']} completed, {s['failed']} failed, {s['abandoned']} abandoned, {s['late']} late; "
        "recommendation "
        + describe_recommendation(s["recommendation"], [session.arm_names(b) for b in range(len(session.sources))],
                                  "bandits" in s)
    )


def safety_options(command: Any) -> Any:
    """The options that bound what clients may cost (``armlab serve`` and ``armlab server``)."""
    for option in reversed([
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
        click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
                     help="0 picks a free port."),
        click.option("--insecure", is_flag=True, help="Serve without a token (loopback addresses only)."),
        click.option("--max-body", default=DEFAULT_MAX_BODY, show_default=True, type=click.IntRange(min=256),
                     help="Largest request body in bytes."),
        click.option("--request-timeout", "--header-timeout", "request_timeout", default=DEFAULT_REQUEST_TIMEOUT,
                     show_default=True, type=click.FloatRange(min=0.1),
                     help="Seconds a connection may take to send a complete request (head and body) before it "
                     "is closed (--header-timeout is the older name)."),
        click.option("--max-connections", default=DEFAULT_MAX_CONNECTIONS, show_default=True,
                     type=click.IntRange(min=1), help="Open connections at most; further ones are closed at once."),
        click.option("--max-subscribers", default=DEFAULT_MAX_SUBSCRIBERS, show_default=True,
                     type=click.IntRange(min=1), help="Readers of an /events stream at most; further ones get 503."),
        click.option("--log", "log_path", type=click.Path(dir_okay=False), help=_LOG_HELP),
    ]):
        command = option(command)
    return command


@click.command("serve")
@click.argument("config_path", metavar="[CONFIG.toml]", required=False, type=click.Path(dir_okay=False))
@click.option("--journal", "journal_path", required=True, type=click.Path(dir_okay=False),
              help="SQLite journal: created for CONFIG, or resumed if it exists (CONFIG may then be omitted).")
@click.option("--token-file", type=click.Path(dir_okay=False), envvar="ARMLAB_TOKEN_FILE", show_envvar=True,
              help=f"File whose first line is the bearer token (else ${TOKEN_ENV}).")
@safety_options
@click.pass_obj
def serve_command(
    app: App, config_path: str | None, journal_path: str, host: str, port: int,
    token_file: str | None, insecure: bool, max_body: int, request_timeout: float, max_connections: int,
    max_subscribers: int, log_path: str | None,
) -> None:
    """Serve the live experiment in CONFIG.toml over HTTP (ask, tell, abandon, status, events)."""
    with user_errors():
        uvicorn = require("uvicorn", "live", "armlab serve")
        require("fastapi", "live", "armlab serve")

    from armlab.service.app import create_app
    from armlab.service.auth import resolve_token

    with ExitStack() as stack:
        with user_errors():
            token = resolve_token(host, token_file, insecure)
            sock = stack.enter_context(_bind(host, port))  # a busy port fails before the journal exists
            _configure_logs(stack, log_path)
            session = LiveSession.open(journal=journal_path, config=config_path, registry=app.registry)
        stack.callback(session.close)
        session.experiment.add_listener(log_event)
        fatal: list[Exception] = []

        def stop(exc: Exception) -> None:  # the journal can no longer be written
            fatal.append(exc)
            server.should_exit = True

        asgi = create_app(session, token=token, max_body_size=max_body, max_subscribers=max_subscribers,
                          on_fatal=stop)
        server = _server(uvicorn, asgi, request_timeout, max_connections)
        click.echo(
            f"armlab: serving {session.config.name!r} on http://{host}:{sock.getsockname()[1]} "
            f"(journal {journal_path}, {session.replayed} events replayed"
            f"{', NO AUTHENTICATION' if token is None else ''})"
        )
        sys.stdout.flush()
        _warn_if_exposed(host)
        with user_errors():
            server.run(sockets=[sock])
        if fatal:
            raise UserError(
                f"stopped: {fatal[0]}\nnothing unrecorded was acknowledged; fix the cause (free disk space, "
                f"put the journal back) and run the same command again to resume from {journal_path}"
            )
        click.echo(_outcome_line(session))


def _server(uvicorn: Any, asgi: Any, request_timeout: float, max_connections: int) -> Any:
    """The server that runs ``asgi``, built last before it runs: the collector is set up for
    serving here (:mod:`armlab.service.collector`)."""
    serving_collector()
    config = uvicorn.Config(asgi, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=2,
                            **uvicorn_options(request_timeout, max_connections))
    return _quiet_exit_server(config)


def _warn_if_exposed(host: str) -> None:
    if not is_loopback(host):
        click.echo(f"armlab: warning: serving plain HTTP on {host}: the token and the data travel "
                   "unencrypted; put a TLS-terminating proxy in front, or bind 127.0.0.1", err=True)


@click.command("server")
@click.option("--storage", default=DEFAULT_STORAGE, show_default=True, envvar="ARMLAB_STORAGE", show_envvar=True,
              help="Where the experiments are kept: sqlite:///PATH (a catalog file, journals beside it), or "
                   "postgresql://USER@HOST:PORT/DATABASE (after armlab storage init URL).")
@click.option("--admin-token-file", type=click.Path(dir_okay=False), envvar="ARMLAB_ADMIN_TOKEN_FILE",
              show_envvar=True, help=f"File whose first line is the admin token (else ${ADMIN_TOKEN_ENV}).")
@click.option("--max-loaded", default=DEFAULT_MAX_LOADED, show_default=True, type=click.IntRange(min=1),
              help="Experiments kept open (replayed) at once; the least recently used idle one is closed.")
@click.option("--advertise-url", metavar="URL", envvar="ARMLAB_ADVERTISE_URL", show_envvar=True,
              help="The URL clients and the other server processes reach this one at; requests about an "
                   "experiment this process owns are redirected (307) here. Default: http://HOST:PORT of the "
                   "listener.")
@safety_options
@click.pass_obj
def server_command(
    app: App, storage: str, admin_token_file: str | None, max_loaded: int, advertise_url: str | None, host: str,
    port: int, insecure: bool, max_body: int, request_timeout: float, max_connections: int, max_subscribers: int,
    log_path: str | None,
) -> None:
    """Serve many live experiments from one storage; create them over HTTP (POST /experiments)."""
    with user_errors():
        uvicorn = require("uvicorn", "live", "armlab server")
        require("fastapi", "live", "armlab server")

    from armlab.service.auth import resolve_token
    from armlab.service.server_app import create_server_app
    from armlab.service.server_experiments import Experiments
    from armlab.orchestrator.journal.postgres_schema import shown
    from armlab.storage import open_storage

    with ExitStack() as stack:
        with user_errors():
            token = resolve_token(host, admin_token_file, insecure, env=ADMIN_TOKEN_ENV,
                                  file_option="--admin-token-file")
            sock = stack.enter_context(_bind(host, port))
            advertised = _advertised(advertise_url, host, sock.getsockname()[1])
            _configure_logs(stack, log_path)
            opened = open_storage(storage, advertised)
        stack.callback(opened.close)
        experiments = Experiments(opened, app.registry, max_loaded=max_loaded, max_subscribers=max_subscribers,
                                  advertise_url=advertised)
        asgi = create_server_app(experiments, admin_token=token, max_body_size=max_body)
        server = _server(uvicorn, asgi, request_timeout, max_connections)
        click.echo(f"armlab: server on http://{host}:{sock.getsockname()[1]} (advertised as {advertised}, "
                   f"storage {shown(storage)}, "
                   f"{len(opened.list_experiments())} experiments{', NO AUTHENTICATION' if token is None else ''})")
        sys.stdout.flush()
        _warn_if_exposed(host)
        with user_errors():
            server.run(sockets=[sock])


def _advertised(url: str | None, host: str, port: int) -> str:
    """The URL the server advertises: ``url`` checked, or http://HOST:PORT of its listener."""
    if url is None:
        if host in ("0.0.0.0", "::", ""):
            click.echo(f"armlab: warning: listening on {host or 'every address'} without --advertise-url: other "
                       f"server processes will send clients to http://{host}:{port}; give the URL they reach "
                       "this one at", err=True)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UserError(f"--advertise-url {url!r} is not a base URL: give http(s)://HOST:PORT (optionally a path "
                        "prefix), the address clients reach this process at")
    return url.rstrip("/")


@click.command("resume")
@click.argument("journal_path", metavar="JOURNAL", type=click.Path(exists=True, dir_okay=False))
@click.option("--log", "log_path", type=click.Path(dir_okay=False), help=_LOG_HELP)
@click.pass_obj
def resume_command(app: App, journal_path: str, log_path: str | None) -> None:
    """Replay JOURNAL and continue its live experiment until the budget is spent.

    The resumed run is the run that never stopped: trials that were pending when it
    stopped are run again, and every choice depends only on the seed and the journal.
    """
    with ExitStack() as stack:
        _configure_logs(stack, log_path)
        with user_errors():
            session = LiveSession.open(journal=journal_path, registry=app.registry)
            stack.callback(session.close)
            session.experiment.add_listener(log_event)
            click.echo(f"replayed {session.replayed} events from {journal_path}")
            if not session.runs_trials:
                click.echo(_outcome_line(session))
                click.echo(
                    f"source {session.sources[0].name!r} gets its trials from ask/tell clients; "
                    f"continue with: armlab serve --journal {journal_path}"
                )
                return
            anyio.run(session.run, backend="asyncio")
        click.echo(_outcome_line(session))


@click.command("retire")
@click.argument("arm")
@click.option("--url", default="http://127.0.0.1:8000", show_default=True, envvar="ARMLAB_URL", show_envvar=True,
              help="The running service.")
@click.option("--bandit", default=0, show_default=True, type=click.IntRange(min=0), help="The arm's bandit.")
@click.option("--reason", default="retired by the operator", show_default=True, help="Why, for the journal.")
@click.option("--token-file", type=click.Path(dir_okay=False), envvar="ARMLAB_TOKEN_FILE", show_envvar=True,
              help=f"File whose first line is the bearer token (else ${TOKEN_ENV}).")
def retire_command(arm: str, url: str, bandit: int, reason: str, token_file: str | None) -> None:
    """Retire ARM (its name or index) of a served experiment: it is never dispatched again,
    its results so far stay in the statistics, and the journal records the retirement."""
    import httpx

    from armlab.service.auth import resolve_token

    with user_errors():
        token = resolve_token("127.0.0.1", token_file, insecure=False)
    target: int | str = int(arm) if arm.isdigit() else arm
    try:
        response = httpx.post(f"{url.rstrip('/')}/retire", json={"arm": target, "bandit": bandit, "reason": reason},
                              headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except httpx.HTTPError as exc:
        raise UserError(f"cannot reach the service at {url}: {exc}") from None
    if response.status_code != 200:
        raise UserError(f"not retired ({response.status_code}): {response.json().get('detail', response.text)}")
    answer = response.json()
    click.echo(f"arm {answer['arm_name']!r} (bandit {answer['bandit']}, arm {answer['arm']}): {answer['status']}")

