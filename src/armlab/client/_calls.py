"""What the clients send: each request described once as a :class:`Call`, with no I/O.

A :class:`Call` says the method, the path (relative to an experiment's routes or to the
server's root), the body, how to parse a success and what each error status means.  The
builders here are the only place a route's request is written down; the protocol core
(:mod:`armlab.client._protocol`) sends them and the transports only move bytes.
"""

from __future__ import annotations

import math
import numbers
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from armlab.client.errors import (
    AuthError,
    ConflictError,
    ExperimentExistsError,
    ForbiddenError,
    InvalidExperimentError,
    InvalidRequestError,
    NoTrialError,
    NotFoundError,
    RewardRejectedError,
    ServiceError,
    UnknownExperimentError,
    UnknownTrialError,
)
from armlab.client.models import CreatedExperiment, ExperimentSummary, IssuedToken
from armlab.errors import ConfigError
from armlab.service.models import (
    MAX_BATCH,
    AskBatchOut,
    ItemReportOut,
    ReportOut,
    RetireOut,
    StatusOut,
    TellBatchOut,
    TrialOut,
)

T = TypeVar("T")

#: What an error status means for every request (401, 403, 422), and for those about one trial.
_ANY_ERRORS: Mapping[int, type[ServiceError]] = {401: AuthError, 403: ForbiddenError, 422: InvalidRequestError}
_TRIAL_ERRORS: Mapping[int, type[ServiceError]] = {**_ANY_ERRORS, 404: UnknownTrialError, 409: ConflictError}
_ASK_ERRORS: Mapping[int, type[ServiceError]] = {**_ANY_ERRORS, 409: NoTrialError}
#: The admin routes: 404 is an unknown experiment, 409 a refusal of the experiment's state.
_ADMIN_ERRORS: Mapping[int, type[ServiceError]] = {**_ANY_ERRORS, 404: UnknownExperimentError, 409: ConflictError}


def new_key() -> str:
    """A fresh idempotency key: a retried request that carries it gets the same trial."""
    return uuid.uuid4().hex


def experiment_path(name: str) -> str:
    """``/experiments/{name}`` with the name quoted as one path segment (``/`` included).

    ``""``, ``"."`` and ``".."`` are refused: no quoting keeps them one segment of their own.
    """
    if not isinstance(name, str) or name in ("", ".", ".."):
        raise ConfigError(f"experiment name {name!r} cannot name an experiment: give its name as created")
    return f"/experiments/{quote(name, safe='')}"


def experiment_route(path: str) -> str | None:
    """The ``/experiments/{name}`` that ``path`` is under (what one owner process serves), or
    None for a path about no one experiment."""
    parts = path.split("/", 3)
    if len(parts) < 3 or parts[0] or parts[1] != "experiments" or not parts[2]:
        return None
    return f"/experiments/{parts[2]}"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: what to send, how to read a success, what its error statuses mean
    (others are a plain :class:`ServiceError`: a 404 from a service without the route is
    no unknown trial).  ``held``: how long the service may hold it (an ask's wait);
    ``experiment_route``: sent under ``/experiments/{name}`` of ``armlab server``."""

    method: str
    path: str
    parse: Callable[[Any], T]
    body: Any = None
    errors: Mapping[int, type[ServiceError]] = field(default_factory=lambda: _ANY_ERRORS)
    held: float = 0.0
    experiment_route: bool = False

    def under(self, prefix: str) -> Call[T]:
        """This call on an experiment's routes of ``armlab server`` (``prefix``: its path),
        where a 404 the route has no meaning for says the experiment is unknown."""
        return Call(self.method, prefix + self.path, self.parse, self.body,
                    {404: UnknownExperimentError, **self.errors}, self.held, experiment_route=True)


def _nothing(answer: Any) -> None:
    """The parse of an answer without a body (204)."""


# -- one experiment's routes (``armlab serve``'s, or ``/experiments/{name}/...``) -----------


def ask_call(key: str, wait: float, unit: str | None = None) -> Call[TrialOut]:
    body: dict[str, Any] = {"key": key, "wait": wait}
    if unit is not None:  # sent only when given: a service from before sticky units takes the others
        body["unit"] = unit
    return Call("POST", "/ask", TrialOut.model_validate, body, _ASK_ERRORS, held=wait)


def ask_many_call(count: int, keys: list[str] | None, units: list[str] | None = None) -> Call[AskBatchOut]:
    if not 1 <= count <= MAX_BATCH:
        raise ValueError(f"count must be between 1 and {MAX_BATCH}, not {count}")
    keys = [new_key() for _ in range(count)] if keys is None else list(keys)
    if len(keys) != count:
        raise ValueError(f"give one key per trial ({count}), not {len(keys)}")
    body: dict[str, Any] = {"count": count, "keys": keys}
    if units is not None:
        if len(units) != count:
            raise ValueError(f"give one unit per ask ({count}), not {len(units)}")
        body["units"] = list(units)
    return Call("POST", "/ask/batch", AskBatchOut.model_validate, body, _ASK_ERRORS)


def tell_call(trial_id: int, reward: Any, metrics: Mapping[str, Any] | None = None) -> Call[ReportOut]:
    value, problem = json_reward(reward)
    if problem is not None:
        raise RewardRejectedError(f"trial {trial_id}: {problem}")
    body: dict[str, Any] = {"trial_id": trial_id, "reward": value}
    if metrics is not None:
        body["metrics"] = json_metrics(metrics)
    return Call("POST", "/tell", ReportOut.model_validate, body, {**_TRIAL_ERRORS, 422: RewardRejectedError})


def abandon_call(trial_id: int, reason: str) -> Call[ReportOut]:
    return Call("POST", "/abandon", ReportOut.model_validate, {"trial_id": trial_id, "reason": reason},
                _TRIAL_ERRORS)


def status_call() -> Call[StatusOut]:
    return Call("GET", "/status", StatusOut.model_validate)


def trial_call(trial_id: int) -> Call[TrialOut]:
    return Call("GET", f"/trials/{int(trial_id)}", TrialOut.model_validate, errors=_TRIAL_ERRORS)


def retire_call(arm: int | str, bandit: int, reason: str) -> Call[RetireOut]:
    return Call("POST", "/retire", RetireOut.model_validate, {"arm": arm, "bandit": bandit, "reason": reason},
                {**_ANY_ERRORS, 409: ConflictError})


def events_call() -> Call[None]:
    """``GET /events``: its success is a stream, read line by line, never parsed whole."""
    return Call("GET", "/events", _nothing)


def json_reward(reward: Any) -> tuple[Any, str | None]:
    """A number as a JSON-ready float (NumPy scalars included), anything else unchanged for
    the service to judge; with the reason it is unusable when it is a number that no finite
    float holds (NaN, infinities, integers past the largest float), else None."""
    if not isinstance(reward, numbers.Real) or isinstance(reward, bool):
        return reward, None
    try:
        value = float(reward)
    except OverflowError:
        return reward, "reward must be a finite number, got an integer too large for a float"
    return value, None if math.isfinite(value) else f"reward must be a finite number, got {value!r}"


def json_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Named metrics as JSON carries them (NumPy scalars as floats); the service judges them."""
    return {name: json_reward(value)[0] for name, value in metrics.items()}


class TellBatch:
    """The reports of one ``tell_many``: those JSON can carry go to the service; rewards that
    are no finite float (NaN, infinities, integers past the largest float) get their
    ``rejected`` result here, in place."""

    def __init__(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> None:
        self.items: list[dict[str, Any]] = []
        self.refused: dict[int, ItemReportOut] = {}  # position -> its result
        for position, report in enumerate(reports):
            if isinstance(report, Mapping):
                trial_id, reward, metrics = report["trial_id"], report["reward"], report.get("metrics")
            else:
                trial_id, reward, metrics = (*report, None) if len(report) == 2 else report
            value, problem = json_reward(reward)
            if problem is not None:
                self.refused[position] = ItemReportOut(trial_id=trial_id, status="rejected", message=problem)
            else:
                item = {"trial_id": trial_id, "reward": value}
                if metrics is not None:
                    item["metrics"] = json_metrics(metrics)
                self.items.append(item)
        if len(self.items) + len(self.refused) > MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} reports per batch, not {len(self.items) + len(self.refused)}")

    def call(self) -> Call[TellBatchOut] | None:
        """The request, or None when there is nothing to send."""
        if not self.items:
            return None
        return Call("POST", "/tell/batch", TellBatchOut.model_validate, {"reports": self.items})

    def merge(self, answer: TellBatchOut | None) -> TellBatchOut:
        """The service's results with the refused reports put back at their positions."""
        sent = iter(answer.results if answer is not None else ())
        total = len(self.items) + len(self.refused)
        return TellBatchOut(results=[self.refused[i] if i in self.refused else next(sent) for i in range(total)])


# -- the admin routes of ``armlab server`` ---------------------------------------------------

#: What ``create_experiment`` accepts as a config (see :func:`config_body`).
ConfigSource = str | Mapping[str, Any] | os.PathLike[str]


def config_body(config: ConfigSource) -> str | dict[str, Any]:
    """The ``config`` field of ``POST /experiments``: a ``str`` is TOML text and goes as it
    is, a mapping is the TOML as a JSON object, a path (``pathlib.Path``, any
    ``os.PathLike``) is a .toml file whose text is sent."""
    if isinstance(config, Mapping):
        return dict(config)
    if isinstance(config, os.PathLike):
        path = Path(config)
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the experiment file {str(path)!r}: {getattr(exc, 'strerror', None) or exc}"
                              ) from None
    if isinstance(config, str):
        if config.strip().endswith(".toml") and "=" not in config:
            raise ConfigError(f"config {config!r} looks like a file name, and a str is sent as TOML text: "
                              f"pass pathlib.Path({config.strip()!r}) to send the file")
        return config
    raise ConfigError(f"config must be TOML text (str), a dict or a pathlib.Path, not {type(config).__name__}")


def create_call(name: str, config: ConfigSource) -> Call[CreatedExperiment]:
    return Call("POST", "/experiments", CreatedExperiment.model_validate,
                {"name": name, "config": config_body(config)},
                {**_ADMIN_ERRORS, 409: ExperimentExistsError, 422: InvalidExperimentError})


def list_call() -> Call[list[ExperimentSummary]]:
    return Call("GET", "/experiments", lambda answer: [ExperimentSummary.model_validate(s)
                                                       for s in answer["experiments"]], errors=_ADMIN_ERRORS)


def get_call(name: str) -> Call[ExperimentSummary]:
    return Call("GET", experiment_path(name), ExperimentSummary.model_validate, errors=_ADMIN_ERRORS)


def stop_call(name: str) -> Call[ExperimentSummary]:
    return Call("POST", f"{experiment_path(name)}/stop", ExperimentSummary.model_validate, {}, _ADMIN_ERRORS)


def delete_call(name: str) -> Call[None]:
    return Call("DELETE", experiment_path(name), _nothing, errors=_ADMIN_ERRORS)


def issue_token_call(name: str) -> Call[IssuedToken]:
    return Call("POST", f"{experiment_path(name)}/tokens", IssuedToken.model_validate, {}, _ADMIN_ERRORS)


def revoke_token_call(name: str, token_id: str) -> Call[None]:
    """A 404 here may be the experiment's or the token's: a :class:`NotFoundError` whose
    detail says which."""
    return Call("DELETE", f"{experiment_path(name)}/tokens/{quote(str(token_id), safe='')}", _nothing,
                errors={**_ADMIN_ERRORS, 404: NotFoundError})
