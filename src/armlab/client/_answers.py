"""How the clients read an answer: the parsed result, or the typed error it means."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from armlab.client._calls import _ANY_ERRORS, Call
from armlab.client.errors import (
    ExperimentStoppedError,
    InvalidExperimentError,
    NoTrialError,
    Problem,
    ServiceError,
    ServiceUnavailableError,
    UnknownExperimentError,
    UnknownTrialError,
)

T = TypeVar("T")

#: States in which no trial will ever be dispatched again.
STOPPED_STATES = frozenset({"budget_spent", "stopped", "finished"})


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _detail(response: httpx.Response) -> tuple[str, str | None]:
    """The service's ``detail`` and ``state`` (ErrorOut), or the raw text of another answer."""
    body = _json(response)
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        state = body.get("state")
        return body["detail"], state if isinstance(state, str) else None
    return response.text or response.reason_phrase, None


def problems(response: httpx.Response) -> list[Problem]:
    """Every problem of a 422 whose ``detail`` is a list: the server's ``{"field",
    "message", "fix"}`` items, or FastAPI's own ``{"loc", "msg"}`` ones (a body the route
    could not read); the whole answer as one problem otherwise."""
    body = _json(response)
    items = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items) or not items:
        return [Problem("request", _detail(response)[0])]
    return [
        Problem(
            str(item.get("field") or ".".join(str(part) for part in item.get("loc", ())) or "request"),
            str(item.get("message") or item.get("msg") or item),
            str(item.get("fix") or ""),
        )
        for item in items
    ]


def error_for(response: httpx.Response, errors: Mapping[int, type[ServiceError]] = _ANY_ERRORS,
              experiment_route: bool = False) -> ServiceError:
    """The typed error for an answer that is not a success (``errors``: what each status
    means).  On an experiment's route of ``armlab server`` (``experiment_route``), a 404 of a
    trial route whose detail speaks of the experiment is :class:`UnknownExperimentError`."""
    status = response.status_code
    kind = errors.get(status, ServiceError)
    if issubclass(kind, InvalidExperimentError):
        return kind(problems(response), status_code=status)
    detail, state = _detail(response)
    if kind is NoTrialError and state in STOPPED_STATES:
        kind = ExperimentStoppedError
    elif kind is UnknownTrialError and experiment_route and "experiment" in detail.lower():
        kind = UnknownExperimentError  # a trial route of an experiment the server does not hold
    return kind(detail, status_code=status, state=state)


def read(call: Call[T], response: httpx.Response) -> T:
    """The parsed answer to ``call`` (None's for an answer without a body), or its typed error."""
    if response.is_success:
        return call.parse(response.json() if response.content else None)
    raise error_for(response, call.errors, call.experiment_route)


def retryable(response: httpx.Response) -> bool:
    """A 5xx answer: the service is failing or restarting; every request here is safe to repeat."""
    return response.status_code >= 500


def moved_to(reply: httpx.Response | Exception) -> str | None:
    """Where a 307 or 308 answer sends the request (absolute), or None for any other reply.

    ``armlab server`` answers 307 when another process of the same storage owns the
    experiment, naming that process's ``--advertise-url``: the client sends the same request
    there with its token (the processes share their tokens, so the token goes nowhere it is
    not already valid).  A redirect from https to plain http is not followed: it would send
    the token in the clear.
    """
    if not isinstance(reply, httpx.Response) or reply.status_code not in (307, 308) or "location" not in reply.headers:
        return None
    target = reply.request.url.join(reply.headers["location"])
    if reply.request.url.scheme == "https" and target.scheme != "https":
        return None
    return str(target)


def owner_base(location: str, path: str) -> str | None:
    """The base URL of the owner that a redirect of a request for ``path`` (relative to the
    client's URL) names: ``location`` (absolute, :func:`moved_to`'s) less ``path``, since
    ``armlab server`` redirects to the owner's ``--advertise-url`` with the same path; None
    when ``location`` does not end that way."""
    return location[: -len(path)] if location.endswith(path) and len(location) > len(path) else None


def gave_up(method: str, path: str, tries: int, failure: httpx.Response | Exception) -> ServiceUnavailableError:
    """The error for a request whose ``tries`` all failed (``failure``: the last one)."""
    count = f"{tries} tr{'y' if tries == 1 else 'ies'}"
    if isinstance(failure, httpx.Response):
        detail, state = _detail(failure)
        return ServiceUnavailableError(f"{method} {path}: {detail} ({count})", status_code=failure.status_code,
                                       state=state)
    error = ServiceUnavailableError(f"{method} {path}: no answer from the service after {count}: {failure!r}")
    error.__cause__ = failure
    return error
