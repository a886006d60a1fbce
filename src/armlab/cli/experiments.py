"""``armlab experiments create|list|get|stop|delete|token|revoke URL ...``: manage the
experiments of an ``armlab server`` through its admin routes.

The admin token comes from ``--admin-token-file FILE`` (its first line) or
``$ARMLAB_ADMIN_TOKEN``.  Every refusal is printed as a short message, one line per problem
of a refused config, with exit status 2; never a traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from armlab.cli.errors import UserError, user_errors
from armlab.errors import ConfigError
from armlab.extras import require

if TYPE_CHECKING:
    from armlab.client import AdminClient, ExperimentSummary

__all__ = ["experiments_command"]

ADMIN_TOKEN_ENV = "ARMLAB_ADMIN_TOKEN"
#: A command line gives up quickly on a server that does not answer (the client's default
#: waits a minute, for workers that must ride out a restart).
_RETRIES, _DEADLINE = 2, 10.0


def _admin_token(token_file: str | None) -> str:
    """The admin token from ``token_file`` (first line), else ``$ARMLAB_ADMIN_TOKEN``."""
    if token_file is not None:
        try:
            lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the admin token file {token_file!r}: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise ConfigError(f"the admin token file {token_file!r} is empty: put the token on its first line")
        return token
    token = os.environ.get(ADMIN_TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(f"no admin token: set {ADMIN_TOKEN_ENV} or pass --admin-token-file FILE")
    return token


@contextmanager
def _admin(url: str, token_file: str | None) -> Iterator[AdminClient]:
    """An admin client of the server at ``url``; its refusals become one-line messages."""
    with user_errors():
        client_module = require("armlab.client", "live", "armlab experiments")
        errors = client_module.errors
        token = _admin_token(token_file)
        try:
            with client_module.AdminClient(url, token, retries=_RETRIES, deadline=_DEADLINE) as client:
                yield client
        except errors.ServiceUnavailableError as exc:
            raise UserError(f"cannot reach the armlab server at {url}: {exc.detail}") from None
        except errors.ForbiddenError as exc:
            raise UserError(f"the server refused the token ({exc.detail}, HTTP 403): use the admin token, "
                            f"not an experiment's client token") from None
        except errors.AuthError as exc:
            raise UserError(f"the server refused the admin token ({exc.detail}, HTTP 401): check "
                            f"{ADMIN_TOKEN_ENV} or --admin-token-file") from None
        except errors.InvalidExperimentError as exc:
            raise UserError(str(exc)) from None
        except errors.ServiceError as exc:
            raise UserError(exc.detail) from None


def _recommendation(value: Any) -> str:
    if value is None:
        return "none"
    return f"arm {value}" if isinstance(value, int) else json.dumps(value)


def _describe(summary: ExperimentSummary) -> str:
    """One experiment in one line."""
    budget = "" if summary.budget is None else f"/{summary.budget}"
    last = summary.last_activity.isoformat() if summary.last_activity else "never"
    return (f"{summary.name}: {summary.state}, {summary.trials}{budget} trials, recommendation "
            f"{_recommendation(summary.recommendation)}, last activity {last}")


def _print_token(token: str, token_id: str) -> None:
    click.echo(f"client token (id {token_id}): {token}")
    click.echo("Keep it now: the server stores only its hash, and it will not be shown again.")


_url = click.argument("url")
_name = click.argument("name")
_token_file = click.option("--admin-token-file", type=click.Path(dir_okay=False), default=None,
                           help=f"File whose first line is the admin token (default: ${ADMIN_TOKEN_ENV}).")
_as_json = click.option("--json", "as_json", is_flag=True, help="Print the server's JSON answer.")


@click.group("experiments")
def experiments_command() -> None:
    """Create, list, stop and delete the experiments of an `armlab server` at URL."""


def _on_experiment(command: str) -> Callable[[Callable[..., None]], click.Command]:
    """A sub-command taking URL, NAME and --admin-token-file."""

    def make(function: Callable[..., None]) -> click.Command:
        return experiments_command.command(command)(_url(_name(_token_file(function))))

    return make


@experiments_command.command("create")
@_url
@_name
@click.argument("config_path", metavar="CONFIG.toml", type=click.Path(dir_okay=False))
@_token_file
def create_command(url: str, name: str, config_path: str, admin_token_file: str | None) -> None:
    """Create experiment NAME from CONFIG.toml (a live experiment with external trials) and
    print its client token, once."""
    with _admin(url, admin_token_file) as client:
        created = client.create_experiment(name, Path(config_path))
    click.echo(f"created {_describe(created.experiment)}")
    _print_token(created.token, created.token_id)


@experiments_command.command("list")
@_url
@_token_file
@_as_json
def list_command(url: str, admin_token_file: str | None, as_json: bool) -> None:
    """List every experiment: state, trials, recommendation, last activity."""
    with _admin(url, admin_token_file) as client:
        summaries = client.list_experiments()
    if as_json:
        click.echo(json.dumps([s.model_dump(mode="json") for s in summaries], indent=2))
    for summary in [] if as_json else summaries:
        click.echo(_describe(summary))
    if not summaries and not as_json:
        click.echo("no experiments")


@_on_experiment("get")
@_as_json
def get_command(url: str, name: str, admin_token_file: str | None, as_json: bool) -> None:
    """Show experiment NAME."""
    with _admin(url, admin_token_file) as client:
        summary = client.get_experiment(name)
    click.echo(json.dumps(summary.model_dump(mode="json"), indent=2) if as_json else _describe(summary))


@_on_experiment("stop")
def stop_command(url: str, name: str, admin_token_file: str | None) -> None:
    """Stop dispatching trials of NAME (reports of trials already out are still accepted; the
    data is kept)."""
    with _admin(url, admin_token_file) as client:
        summary = client.stop_experiment(name)
    click.echo(f"stopped {_describe(summary)}")


@_on_experiment("delete")
def delete_command(url: str, name: str, admin_token_file: str | None) -> None:
    """Delete the stopped experiment NAME and its data (the name can be used again)."""
    with _admin(url, admin_token_file) as client:
        client.delete_experiment(name)
    click.echo(f"deleted {name}")


@_on_experiment("token")
def token_command(url: str, name: str, admin_token_file: str | None) -> None:
    """Issue another client token of NAME, printed once."""
    with _admin(url, admin_token_file) as client:
        issued = client.issue_token(name)
    _print_token(issued.token, issued.token_id)


@_on_experiment("revoke")
@click.argument("token_id")
def revoke_command(url: str, name: str, token_id: str, admin_token_file: str | None) -> None:
    """Revoke the client token TOKEN_ID of NAME: refused from now on."""
    with _admin(url, admin_token_file) as client:
        client.revoke_token(name, token_id)
    click.echo(f"revoked token {token_id} of {name}")
