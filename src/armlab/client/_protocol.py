"""The clients' protocol, once, with no I/O: a sans-IO core that both transports drive.

Every operation of :class:`~armlab.client.Client` and :class:`~armlab.client.AsyncClient`
(and of the admin clients) is a generator here: it yields *effects* (:class:`Send` a
request, :class:`Pause`, read a streamed answer's :class:`Lines`, :class:`Close` it) and
receives what each produced; its return value is the operation's result, and the errors it
raises are the client's.  Request building (:mod:`armlab.client._calls`), the retry policy
(:class:`Backoff`), answer parsing and error mapping (:mod:`armlab.client._answers`) and
the event stream's handshake all live here; ``_sync.py`` performs the effects by blocking,
``_async.py`` by awaiting, and neither holds any of the protocol's rules.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from armlab.client import _calls as calls
from armlab.client._answers import error_for, gave_up, moved_to, owner_base, read, retryable
from armlab.client._calls import Call, ConfigSource, TellBatch, new_key, tell_call
from armlab.client._sse import CONNECTED, ENDED_BEFORE_CONNECTED, Message, SSEDecoder, decode_event
from armlab.client.errors import NoTrialError, ServiceUnavailableError
from armlab.client.models import CreatedExperiment, ExperimentSummary, IssuedToken
from armlab.errors import ConfigError
from armlab.events import ExperimentEvent
from armlab.service.auth import TOKEN_ENV
from armlab.service.models import AskBatchOut, ReportOut, RetireOut, StatusOut, TellBatchOut, TrialOut

__all__ = ["TellBatch", "tell_call"]  # also read by the service's tests

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8000"

#: Where the admin client finds the server's admin token when none is passed.
ADMIN_TOKEN_ENV = "ARMLAB_ADMIN_TOKEN"

#: Longest wait for a free in-flight slot that one /ask request may ask of the service
#: (``AskIn.wait``'s bound); longer waits are several requests.
MAX_SERVER_WAIT = 60.0

#: Read timeout of the event stream: the service sends a keep-alive comment every 15 s,
#: so four missed ones mean the connection is dead.
EVENTS_READ_TIMEOUT = 60.0

#: Redirects followed in a row before the request counts as failed (and is tried again later):
#: one is the rule (a non-owner names the owner); more happen only while ownership moves.
MAX_REDIRECTS = 3

#: Failures worth another try: the request may not have arrived, or its answer was lost.
RETRYABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


# -- effects: what a transport does for the core ---------------------------------------------


@dataclass(frozen=True)
class Send:
    """Send a request (through the transport's ``httpx`` client, which adds the base URL and
    the token); the reply is the ``httpx.Response``, or the :data:`RETRYABLE_ERRORS`
    exception that stood in for one.  ``stream``: leave the body unread (``/events``)."""

    method: str
    path: str
    body: Any
    timeout: httpx.Timeout
    stream: bool = False


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds`` (blocking or awaiting); the reply is None."""

    seconds: float


@dataclass(frozen=True)
class Close:
    """Close a streamed answer, reading what is left of its body first when ``read``."""

    response: httpx.Response
    read: bool = False


@dataclass(frozen=True)
class Lines:
    """Start reading a streamed answer line by line; the reply is the transport's line
    iterator, which the core hands back in each :class:`NextLine`."""

    response: httpx.Response


@dataclass(frozen=True)
class NextLine:
    """The next line from ``lines`` (a :class:`Lines` reply): the line, :data:`END` at the
    end of the stream, or the :data:`RETRYABLE_ERRORS` exception that broke it."""

    lines: Any


#: :class:`NextLine`'s reply at the end of the stream, and an event stream's last item.
END = object()

Effect = Send | Pause | Close | Lines | NextLine
#: An operation: yields effects, receives their replies, returns its result.
Operation = Generator[Effect, Any, T]


# -- the retry policy ------------------------------------------------------------------------


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


def with_held_time(timeout: httpx.Timeout, held: float) -> httpx.Timeout:
    """``timeout`` with ``held`` more seconds to read the answer (the service waits that long)."""
    if not held or timeout.read is None:
        return timeout
    return with_read(timeout, timeout.read + held)


def with_read(timeout: httpx.Timeout, read: float) -> httpx.Timeout:
    """``timeout`` with another read timeout."""
    return httpx.Timeout(connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool)


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


def _failed(reply: httpx.Response | Exception) -> bool:
    """No answer came (the :data:`RETRYABLE_ERRORS` exception that stood in for one), or a 5xx."""
    return not isinstance(reply, httpx.Response) or retryable(reply)


def auth_headers(token: str | None, insecure: bool, env: str = TOKEN_ENV) -> dict[str, str]:
    """The Authorization header for ``token``, else ``$env``; none when ``insecure``."""
    if insecure:
        return {}
    token = token if token is not None else os.environ.get(env, "").strip()
    if not token:
        raise ConfigError(
            f"no token for the armlab service: pass token=... or set {env}"
            + (" (insecure=True talks to a service started with --insecure, without a token)"
               if env == TOKEN_ENV else "")
        )
    return {"Authorization": f"Bearer {token}"}


# -- the protocol ----------------------------------------------------------------------------


class Protocol:
    """The settings of one client and the operations every client shares.

    ``timeout`` (seconds, or an ``httpx.Timeout``) bounds each try; ``retries``,
    ``deadline``, ``backoff`` and ``max_backoff`` make the :class:`Backoff` of each request;
    ``headers`` carry the token the transport sends with every request.
    """

    def __init__(
        self, url: str, headers: dict[str, str], *, timeout: float | httpx.Timeout, retries: int | None,
        deadline: float | None, backoff: float, max_backoff: float,
    ) -> None:
        self.url = url
        self.headers = headers
        self.timeout = httpx.Timeout(timeout)
        self.backoff = Backoff(retries, deadline, backoff, max_backoff)
        self.rng = random.Random()  # jitter only: clients restarted together must not retry in step
        #: ``/experiments/{name}`` -> the base URL of the process a redirect led to (its owner)
        self.owners: dict[str, str] = {}

    def exchange(self, method: str, path: str, body: Any, timeout: httpx.Timeout,
                 stream: bool = False) -> Operation[httpx.Response]:
        """Send until an answer below 500 comes, or the retries or the deadline run out.

        A 307 or 308 (another server process owns the experiment) is followed with the same
        method, body and token (:func:`~armlab.client._answers.moved_to`), up to
        :data:`MAX_REDIRECTS` in a row, and the owner it led to is remembered for the
        experiment (:attr:`owners`): its next requests go there directly.  When the
        remembered owner fails (no answer, a 5xx) or redirects in turn, it is forgotten and
        the request goes to the client's own URL at once, whose process may have taken the
        experiment over (or names the new owner); a failure after a redirect is retried
        there too.
        """
        route = calls.experiment_route(path)
        attempts = self.backoff.start(self.rng)
        while True:
            owner = self.owners.get(route) if route is not None else None
            reply = yield Send(method, path if owner is None else owner + path, body, timeout, stream)
            if owner is not None and (_failed(reply) or moved_to(reply)):
                self.owners.pop(route, None)
                if isinstance(reply, httpx.Response):
                    yield Close(reply, read=True)
                reply = yield Send(method, path, body, timeout, stream)
            reply = yield from self._follow(reply, route, method, path, body, timeout, stream)
            if not _failed(reply) and not moved_to(reply):
                return reply
            if isinstance(reply, httpx.Response):
                yield Close(reply, read=True)
            delay = attempts.next_delay()
            if delay is None:
                raise gave_up(method, path, attempts.retried + 1, reply)
            yield Pause(delay)

    def _follow(self, reply: httpx.Response | Exception, route: str | None, method: str, path: str, body: Any,
                timeout: httpx.Timeout, stream: bool) -> Operation[httpx.Response | Exception]:
        """``reply``'s redirects followed (at most :data:`MAX_REDIRECTS`); the last reply.
        The owner that answered at the end is remembered for ``route``."""
        owner = None
        for _ in range(MAX_REDIRECTS):
            location = moved_to(reply)
            if location is None:
                break
            owner = owner_base(location, path)
            yield Close(reply, read=True)
            reply = yield Send(method, location, body, timeout, stream)
        if owner is not None and route is not None and not _failed(reply) and not moved_to(reply):
            self.owners[route] = owner
        return reply

    def perform(self, call: Call[T]) -> Operation[T]:
        """``call`` sent (with retries) and its answer read."""
        response = yield from self.exchange(call.method, call.path, call.body,
                                            with_held_time(self.timeout, call.held))
        return read(call, response)


class ExperimentProtocol(Protocol):
    """The operations on one experiment: ``armlab serve``'s routes, or with ``experiment`` a
    name, ``/experiments/{name}/...`` of ``armlab server`` (the name quoted)."""

    def __init__(self, url: str, headers: dict[str, str], experiment: str | None, **settings: Any) -> None:
        super().__init__(url, headers, **settings)
        self.experiment = experiment
        self.prefix = "" if experiment is None else calls.experiment_path(experiment)

    def perform(self, call: Call[T]) -> Operation[T]:
        return (yield from super().perform(call.under(self.prefix) if self.prefix else call))

    def ask(self, key: str | None, wait: float, unit: str | None = None) -> Operation[TrialOut]:
        key = new_key() if key is None else key
        until = time.monotonic() + wait
        while True:
            sent_at = time.monotonic()
            held = min(max(0.0, until - sent_at), MAX_SERVER_WAIT)
            try:
                return (yield from self.perform(calls.ask_call(key, held, unit)))
            except NoTrialError as exc:
                delay = next_ask_delay(exc, until, sent_at, held)
                if delay is None:
                    raise
            yield Pause(delay)

    def ask_many(self, count: int, keys: list[str] | None, units: list[str] | None = None) -> Operation[AskBatchOut]:
        return self.perform(calls.ask_many_call(count, keys, units))

    def tell(self, trial_id: int, reward: Any, metrics: Mapping[str, Any] | None = None) -> Operation[ReportOut]:
        return self.perform(tell_call(trial_id, reward, metrics))

    def tell_many(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> Operation[TellBatchOut]:
        batch = TellBatch(reports)
        call = batch.call()
        return batch.merge(None if call is None else (yield from self.perform(call)))

    def abandon(self, trial_id: int, reason: str) -> Operation[ReportOut]:
        return self.perform(calls.abandon_call(trial_id, reason))

    def retire(self, arm: int | str, bandit: int, reason: str) -> Operation[RetireOut]:
        return self.perform(calls.retire_call(arm, bandit, reason))

    def status(self) -> Operation[StatusOut]:
        return self.perform(calls.status_call())

    def trial(self, trial_id: int) -> Operation[TrialOut]:
        return self.perform(calls.trial_call(trial_id))


class AdminProtocol(Protocol):
    """The admin operations of ``armlab server`` (``docs/client.md``)."""

    def create_experiment(self, name: str, config: ConfigSource) -> Operation[CreatedExperiment]:
        return self.perform(calls.create_call(name, config))

    def list_experiments(self) -> Operation[list[ExperimentSummary]]:
        return self.perform(calls.list_call())

    def get_experiment(self, name: str) -> Operation[ExperimentSummary]:
        return self.perform(calls.get_call(name))

    def stop_experiment(self, name: str) -> Operation[ExperimentSummary]:
        return self.perform(calls.stop_call(name))

    def delete_experiment(self, name: str) -> Operation[None]:
        return self.perform(calls.delete_call(name))

    def issue_token(self, name: str) -> Operation[IssuedToken]:
        return self.perform(calls.issue_token_call(name))

    def revoke_token(self, name: str, token_id: str) -> Operation[None]:
        return self.perform(calls.revoke_token_call(name, token_id))


class ExperimentClientBase:
    """The arguments of :class:`~armlab.client.Client` and :class:`~armlab.client.AsyncClient`
    (documented on ``Client``); the transport connects in :meth:`_connect`."""

    def __init__(
        self, url: str = DEFAULT_URL, token: str | None = None, *, experiment: str | None = None,
        insecure: bool = False, timeout: float | httpx.Timeout = 10.0, retries: int | None = 20,
        deadline: float | None = 60.0, backoff: float = 0.05, max_backoff: float = 2.0,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.experiment_protocol = ExperimentProtocol(
            url, auth_headers(token, insecure), experiment, timeout=timeout, retries=retries, deadline=deadline,
            backoff=backoff, max_backoff=max_backoff)
        self._connect(self.experiment_protocol, transport)

    def _connect(self, protocol: Protocol, transport: Any) -> None:
        raise NotImplementedError


class AdminClientBase:
    """The arguments of :class:`~armlab.client.AdminClient` and its async twin: ``token``
    defaults to ``$ARMLAB_ADMIN_TOKEN``, the others are ``Client``'s."""

    def __init__(
        self, url: str = DEFAULT_URL, token: str | None = None, *, timeout: float | httpx.Timeout = 10.0,
        retries: int | None = 20, deadline: float | None = 60.0, backoff: float = 0.05, max_backoff: float = 2.0,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.admin_protocol = AdminProtocol(
            url, auth_headers(token, False, ADMIN_TOKEN_ENV), timeout=timeout, retries=retries,
            deadline=deadline, backoff=backoff, max_backoff=max_backoff)
        self._connect(self.admin_protocol, transport)

    def _connect(self, protocol: Protocol, transport: Any) -> None:
        raise NotImplementedError


class EventFeed:
    """One subscription to an experiment's ``GET /events``, as operations: :meth:`open`
    (retried like any request; returns once the service confirmed the subscription),
    :meth:`next` (the next event as an :mod:`armlab.events` dataclass, a dict for a kind
    this armlab cannot build, :data:`END` when the service closed the stream) and
    :meth:`close`."""

    def __init__(self, protocol: ExperimentProtocol) -> None:
        self._protocol = protocol
        self._response: httpx.Response | None = None
        self._lines: Any = None
        self._decoder = SSEDecoder()

    def open(self) -> Operation[None]:
        if self._response is not None:
            return
        call = calls.events_call()
        call = call.under(self._protocol.prefix) if self._protocol.prefix else call
        timeout = with_read(self._protocol.timeout, EVENTS_READ_TIMEOUT)
        response = yield from self._protocol.exchange(call.method, call.path, None, timeout, stream=True)
        if not response.is_success:
            yield Close(response, read=True)
            raise error_for(response, call.errors, call.experiment_route)
        self._response = response
        self._lines = yield Lines(response)
        while (item := (yield from self._next_item())) != CONNECTED:
            if item is END:
                raise ServiceUnavailableError(ENDED_BEFORE_CONNECTED)

    def next(self) -> Operation[ExperimentEvent | dict[str, Any] | object]:
        yield from self.open()
        while not isinstance(item := (yield from self._next_item()), Message):
            if item is END:
                return END
        return decode_event(item)

    def close(self) -> Operation[None]:
        if self._response is not None:
            yield Close(self._response)

    def _next_item(self) -> Operation[Message | str | object | None]:
        assert self._lines is not None  # set by open()
        line = yield NextLine(self._lines)
        if isinstance(line, Exception):
            raise ServiceUnavailableError(f"the event stream broke: {line!r}") from line
        return END if line is END else self._decoder.feed(line)
