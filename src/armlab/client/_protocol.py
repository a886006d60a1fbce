"""What both clients send and how they read the answers, with no I/O of its own.

:class:`~armlab.client.Client` and :class:`~armlab.client.AsyncClient` differ only in how
they wait (blocking or awaiting).  Each request is described here once as a :class:`Call`
(method, path, body, how to parse a success, what its 409 and 422 mean); the retry
schedule (:class:`Backoff`), the mapping of answers to errors and the decoding of
server-sent events are shared too.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

import httpx

from armlab.client.errors import (
    AuthError,
    ConflictError,
    ExperimentStoppedError,
    InvalidRequestError,
    NoTrialError,
    RewardRejectedError,
    ServiceError,
    ServiceUnavailableError,
    UnknownTrialError,
)
from armlab.errors import ConfigError
from armlab.events import EVENT_TYPES, ExperimentEvent
from armlab.service.auth import TOKEN_ENV
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

#: Longest wait for a free in-flight slot that one /ask request may ask of the service
#: (``AskIn.wait``'s bound); longer waits are several requests.
MAX_SERVER_WAIT = 60.0

#: Read timeout of the event stream: the service sends a keep-alive comment every 15 s,
#: so four missed ones mean the connection is dead.
EVENTS_READ_TIMEOUT = 60.0

#: States in which no trial will ever be dispatched again.
STOPPED_STATES = frozenset({"budget_spent", "stopped", "finished"})

#: Failures worth another try: the request may not have arrived, or its answer was lost.
RETRYABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def auth_headers(token: str | None, insecure: bool) -> dict[str, str]:
    """The Authorization header for ``token``, else ``$ARMLAB_TOKEN``; none when ``insecure``."""
    if insecure:
        return {}
    token = token if token is not None else os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(
            f"no token for the armlab service: pass token=... or set {TOKEN_ENV} "
            "(insecure=True talks to a service started with --insecure, without a token)"
        )
    return {"Authorization": f"Bearer {token}"}


def new_key() -> str:
    """A fresh idempotency key: a retried request that carries it gets the same trial."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Backoff:
    """When to try a failed request again: exponential backoff with jitter, bounded.

    Try ``n`` (0-based) waits between half and all of ``min(cap, base * 2**n)`` seconds;
    retrying stops after ``retries`` tries (None: no bound) or when the next wait would end
    more than ``deadline`` seconds (None: no bound) after the first try started.
    """

    retries: int | None
    deadline: float | None
    base: float
    cap: float

    def __post_init__(self) -> None:
        if self.retries is not None and self.retries < 0:
            raise ValueError(f"retries must be >= 0 or None, not {self.retries}")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError(f"deadline must be > 0 or None, not {self.deadline}")
        if not 0 < self.base <= self.cap:
            raise ValueError(f"need 0 < backoff <= max_backoff, not {self.base} and {self.cap}")

    def start(self, rng: random.Random) -> Attempts:
        return Attempts(self, rng)


class Attempts:
    """The retries of one request (see :class:`Backoff`)."""

    def __init__(self, backoff: Backoff, rng: random.Random) -> None:
        self.backoff = backoff
        self.rng = rng
        self.retried = 0
        self.started = time.monotonic()

    def next_delay(self) -> float | None:
        """Seconds to wait before the next try, or None to give up."""
        b = self.backoff
        if b.retries is not None and self.retried >= b.retries:
            return None
        step = min(b.cap, b.base * 2 ** min(self.retried, 60))
        delay = step / 2 + self.rng.uniform(0, step / 2)
        if b.deadline is not None and time.monotonic() - self.started + delay > b.deadline:
            return None
        self.retried += 1
        return delay


def gave_up(method: str, path: str, attempts: Attempts, failure: httpx.Response | Exception) -> ServiceUnavailableError:
    """The error for a request whose tries all failed (``failure``: the last one)."""
    tries = f"{attempts.retried + 1} tr{'y' if attempts.retried == 0 else 'ies'}"
    if isinstance(failure, httpx.Response):
        detail, state = _detail(failure)
        return ServiceUnavailableError(f"{method} {path}: {detail} ({tries})", status_code=failure.status_code,
                                       state=state)
    error = ServiceUnavailableError(f"{method} {path}: no answer from the service after {tries}: {failure!r}")
    error.__cause__ = failure
    return error


def with_held_time(timeout: httpx.Timeout, held: float) -> httpx.Timeout:
    """``timeout`` with ``held`` more seconds to read the answer (the service waits that long)."""
    if not held or timeout.read is None:
        return timeout
    return with_read(timeout, timeout.read + held)


def with_read(timeout: httpx.Timeout, read: float) -> httpx.Timeout:
    """``timeout`` with another read timeout."""
    return httpx.Timeout(connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool)


# -- requests -------------------------------------------------------------------------------


#: What an error status means for every request (401, 422), and for those about one trial.
_ANY_ERRORS: Mapping[int, type[ServiceError]] = {401: AuthError, 422: InvalidRequestError}
_TRIAL_ERRORS: Mapping[int, type[ServiceError]] = {**_ANY_ERRORS, 404: UnknownTrialError, 409: ConflictError}
_ASK_ERRORS: Mapping[int, type[ServiceError]] = {**_ANY_ERRORS, 409: NoTrialError}


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: what to send, how to read a success, what its error statuses mean
    (others are a plain :class:`ServiceError`: a 404 from a service without the route is
    no unknown trial).  ``held``: how long the service may hold it (an ask's wait)."""

    method: str
    path: str
    parse: Callable[[Any], T]
    body: Any = None
    errors: Mapping[int, type[ServiceError]] = field(default_factory=lambda: _ANY_ERRORS)
    held: float = 0.0


def ask_call(key: str, wait: float) -> Call[TrialOut]:
    return Call("POST", "/ask", TrialOut.model_validate, {"key": key, "wait": wait}, _ASK_ERRORS, held=wait)


def next_ask_delay(refusal: NoTrialError, until: float, sent_at: float, held: float) -> float | None:
    """After an ask refused with ``refusal``: None to raise it, else seconds to wait before
    asking again.  Only ``in_flight_full`` before ``until`` (monotonic) is asked again: at
    once when the service held the ask the ``held`` seconds asked for, else after up to a
    second (its Retry-After), so that a service answering at once (one whose source runs
    its own trials) is not asked in a busy loop."""
    now = time.monotonic()
    if refusal.state != "in_flight_full" or now >= until:
        return None
    return 0.0 if now - sent_at >= held else min(1.0, until - now)


def ask_many_call(count: int, keys: list[str] | None) -> Call[AskBatchOut]:
    if not 1 <= count <= MAX_BATCH:
        raise ValueError(f"count must be between 1 and {MAX_BATCH}, not {count}")
    keys = [new_key() for _ in range(count)] if keys is None else list(keys)
    if len(keys) != count:
        raise ValueError(f"give one key per trial ({count}), not {len(keys)}")
    return Call("POST", "/ask/batch", AskBatchOut.model_validate, {"count": count, "keys": keys},
                _ASK_ERRORS)


def tell_call(trial_id: int, reward: Any) -> Call[ReportOut]:
    value, problem = json_reward(reward)
    if problem is not None:
        raise RewardRejectedError(f"trial {trial_id}: {problem}")
    return Call("POST", "/tell", ReportOut.model_validate, {"trial_id": trial_id, "reward": value},
                {**_TRIAL_ERRORS, 422: RewardRejectedError})


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


class TellBatch:
    """The reports of one ``tell_many``: those JSON can carry go to the service; rewards that
    are no finite float (NaN, infinities, integers past the largest float) get their
    ``rejected`` result here, in place."""

    def __init__(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> None:
        self.items: list[dict[str, Any]] = []
        self.refused: dict[int, ItemReportOut] = {}  # position -> its result
        for position, report in enumerate(reports):
            if isinstance(report, Mapping):
                trial_id, reward = report["trial_id"], report["reward"]
            else:
                trial_id, reward = report
            value, problem = json_reward(reward)
            if problem is not None:
                self.refused[position] = ItemReportOut(trial_id=trial_id, status="rejected", message=problem)
            else:
                self.items.append({"trial_id": trial_id, "reward": value})
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


# -- answers --------------------------------------------------------------------------------


def _detail(response: httpx.Response) -> tuple[str, str | None]:
    """The service's ``detail`` and ``state`` (ErrorOut), or the raw text of another answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        state = body.get("state")
        return body["detail"], state if isinstance(state, str) else None
    return response.text or response.reason_phrase, None


def error_for(response: httpx.Response, errors: Mapping[int, type[ServiceError]] = _ANY_ERRORS) -> ServiceError:
    """The typed error for an answer that is not a success (``errors``: what each status means)."""
    detail, state = _detail(response)
    status = response.status_code
    kind = errors.get(status, ServiceError)
    if kind is NoTrialError and state in STOPPED_STATES:
        kind = ExperimentStoppedError
    return kind(detail, status_code=status, state=state)


def read(call: Call[T], response: httpx.Response) -> T:
    """The parsed answer to ``call``, or its typed error."""
    if response.is_success:
        return call.parse(response.json())
    raise error_for(response, call.errors)


def retryable(response: httpx.Response) -> bool:
    """A 5xx answer: the service is failing or restarting; every request here is safe to repeat."""
    return response.status_code >= 500


# -- server-sent events ---------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One server-sent event: its ``event`` name and its ``data``."""

    event: str
    data: str


class SSEDecoder:
    """Reads a ``text/event-stream`` one line at a time (the format's field rules)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Message | str | None:
        """A :class:`Message` at the blank line that ends it, a comment's text, else None."""
        if not line:
            message = Message(self._event or "message", "\n".join(self._data)) if self._data else None
            self._event, self._data = "", []
            return message
        if line.startswith(":"):
            return line[1:].strip()
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


#: The comment with which the service confirms a subscription (events from then on arrive).
CONNECTED = "connected"
ENDED_BEFORE_CONNECTED = "GET /events: the stream ended before the service confirmed the subscription"


def decode_event(message: Message) -> ExperimentEvent | dict[str, Any]:
    """The :mod:`armlab.events` dataclass named by the message, or its JSON data as a dict
    when this armlab cannot build one: a kind it does not know, or one that lacks a field.
    Fields the dataclass does not have (a newer service's) are left out, so a service of
    another version never breaks the stream."""
    data = json.loads(message.data)
    kind = EVENT_TYPES.get(message.event)
    if kind is None:
        return data
    names = {f.name for f in fields(kind)}
    try:
        return kind(**{name: value for name, value in data.items() if name in names})
    except TypeError:  # a field of this armlab's dataclass that the service did not send
        return data


# -- settings -------------------------------------------------------------------------------

DEFAULT_URL = "http://127.0.0.1:8000"


class ClientBase:
    """The settings :class:`~armlab.client.Client` and :class:`~armlab.client.AsyncClient` share.

    ``timeout`` (seconds, or an ``httpx.Timeout``) bounds each try; ``retries``,
    ``deadline``, ``backoff`` and ``max_backoff`` make the :class:`Backoff` of each request.
    """

    def __init__(
        self, url: str, token: str | None, *, insecure: bool, timeout: float | httpx.Timeout,
        retries: int | None, deadline: float | None, backoff: float, max_backoff: float,
    ) -> None:
        self.url = url
        self.timeout = httpx.Timeout(timeout)
        self.backoff = Backoff(retries, deadline, backoff, max_backoff)
        self.headers = auth_headers(token, insecure)
        self.rng = random.Random()  # jitter only: clients restarted together must not retry in step
