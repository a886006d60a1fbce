"""The blocking client, :class:`Client`, and its event stream."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from armlab.client import _protocol as p
from armlab.client.errors import NoTrialError, ServiceUnavailableError
from armlab.events import ExperimentEvent
from armlab.service.models import (
    AskBatchOut,
    ReportOut,
    RetireOut,
    StatusOut,
    TellBatchOut,
    TrialOut,
)

__all__ = ["Client", "EventStream"]

T = TypeVar("T")


class Client(p.ClientBase):
    """A blocking client of ``armlab serve`` (see :mod:`armlab.client` for the rules it keeps).

    ``token`` defaults to ``$ARMLAB_TOKEN``; ``insecure=True`` sends none (a service started
    with ``--insecure``).  ``timeout`` bounds each try, ``retries`` and ``deadline`` (seconds
    since the first try; None: unbounded) bound the retries of a request that got no answer
    or a 5xx, spaced by exponential backoff from ``backoff`` up to ``max_backoff`` seconds.
    ``transport`` replaces httpx's (tests, ``httpx.MockTransport``).  ``http`` is the
    underlying ``httpx.Client``, for requests this class does not wrap.
    """

    def __init__(
        self, url: str = p.DEFAULT_URL, token: str | None = None, *, insecure: bool = False,
        timeout: float | httpx.Timeout = 10.0, retries: int | None = 20, deadline: float | None = 60.0,
        backoff: float = 0.05, max_backoff: float = 2.0, transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(url, token, insecure=insecure, timeout=timeout, retries=retries, deadline=deadline,
                         backoff=backoff, max_backoff=max_backoff)
        self.http = httpx.Client(base_url=url, headers=self.headers, timeout=self.timeout, transport=transport)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self.http.close()

    # -- the API ----------------------------------------------------------------------------

    def ask(self, key: str | None = None, wait: float = 0.0) -> TrialOut:
        """The next trial to run.

        ``key`` (a new random one by default) is sent with every retry, so an answer lost
        in transit (or in a crash of the service) gives the same trial, not a second one.
        ``wait``: seconds to wait for a free in-flight slot; :class:`NoTrialError`
        (``in_flight_full``) once it ran out, :class:`ExperimentStoppedError` when no trial
        will be dispatched any more.
        """
        key = p.new_key() if key is None else key
        until = time.monotonic() + wait
        while True:
            sent_at = time.monotonic()
            held = min(max(0.0, until - sent_at), p.MAX_SERVER_WAIT)
            try:
                return self._send(p.ask_call(key, held))
            except NoTrialError as exc:
                delay = p.next_ask_delay(exc, until, sent_at, held)
                if delay is None:
                    raise
            time.sleep(delay)

    def ask_many(self, count: int, keys: list[str] | None = None) -> AskBatchOut:
        """Up to ``count`` trials (at most 1000) in one request: ``.trials`` and the state
        after them; fewer when the experiment cannot dispatch more (:class:`NoTrialError`
        when it can dispatch none).  One key per trial (``keys``, or new random ones) makes
        a retried batch return the same trials."""
        return self._send(p.ask_many_call(count, keys))

    def tell(self, trial_id: int, reward: float) -> ReportOut:
        """Report a trial's reward: ``accepted``, ``duplicate`` (the same report again, as
        after a retry) or ``late`` (the trial had failed or was abandoned: recorded, not
        counted).  Answered once the report is durable."""
        return self._send(p.tell_call(trial_id, reward))

    def tell_many(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> TellBatchOut:
        """Report many rewards in one request: ``(trial_id, reward)`` pairs or dicts with
        those keys (at most 1000).  ``.results`` has one entry per report, in order; a bad
        report gets its own status (``conflict``, ``unknown``, ``rejected``), not an error."""
        batch = p.TellBatch(reports)
        call = batch.call()
        return batch.merge(None if call is None else self._send(call))

    def abandon(self, trial_id: int, reason: str = "abandoned by the client") -> ReportOut:
        """Give a pending trial up: its slot is freed and it gets no reward."""
        return self._send(p.abandon_call(trial_id, reason))

    def retire(self, arm: int | str, bandit: int = 0, reason: str = "retired by the operator") -> RetireOut:
        """Retire ``arm`` (index or name) of ``bandit``: never dispatched again, its results
        so far kept; ``status`` says ``retired`` or ``already retired`` (a retry).
        :class:`ConflictError` when the service refuses (unknown arm, the last active one, a
        policy that cannot skip arms)."""
        return self._send(p.retire_call(arm, bandit, reason))

    def status(self) -> StatusOut:
        """The experiment's state, counts, estimates and recommendation."""
        return self._send(p.status_call())

    def trial(self, trial_id: int) -> TrialOut:
        """One trial and its status."""
        return self._send(p.trial_call(trial_id))

    def events(self) -> EventStream:
        """The experiment's events as they happen; use it as ``with client.events() as events:``
        (entering returns once the service confirmed the subscription)."""
        return EventStream(self)

    # -- sending ----------------------------------------------------------------------------

    def _send(self, call: p.Call[T]) -> T:
        response = self._request(call.method, call.path, call.body, p.with_held_time(self.timeout, call.held))
        return p.read(call, response)

    def _request(self, method: str, path: str, body: Any, timeout: httpx.Timeout,
                 stream: bool = False) -> httpx.Response:
        """Send until an answer below 500 comes, or the retries or the deadline run out."""
        attempts = self.backoff.start(self.rng)
        while True:
            request = self.http.build_request(method, path, json=body, timeout=timeout)
            try:
                response = self.http.send(request, stream=stream)
            except p.RETRYABLE_ERRORS as exc:
                failure: httpx.Response | Exception = exc
            else:
                if not p.retryable(response):
                    return response
                response.read()
                response.close()
                failure = response
            delay = attempts.next_delay()
            if delay is None:
                raise p.gave_up(method, path, attempts, failure)
            time.sleep(delay)


class EventStream:
    """The service's ``GET /events`` as :mod:`armlab.events` dataclasses (a dict for kinds
    this armlab does not know).

    Entering (or the first ``next``) opens the stream, with retries, and returns once the
    service confirmed the subscription: every event from then on arrives, unless the reader
    falls more than 1000 events behind.  The iteration ends when the service closes the
    stream; a broken connection raises :class:`ServiceUnavailableError` (open a new one).
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._response: httpx.Response | None = None
        self._lines: Iterator[str] | None = None
        self._decoder = p.SSEDecoder()

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        """Subscribe (nothing if already subscribed)."""
        if self._response is not None:
            return
        timeout = p.with_read(self._client.timeout, p.EVENTS_READ_TIMEOUT)
        response = self._client._request("GET", "/events", None, timeout, stream=True)
        if not response.is_success:
            response.read()
            response.close()
            raise p.error_for(response)
        self._response, self._lines = response, response.iter_lines()
        try:
            while self._next_item() != p.CONNECTED:
                pass
        except StopIteration:
            raise ServiceUnavailableError(p.ENDED_BEFORE_CONNECTED) from None

    def close(self) -> None:
        """Unsubscribe."""
        if self._response is not None:
            self._response.close()

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> ExperimentEvent | dict[str, Any]:
        self.open()
        while not isinstance(item := self._next_item(), p.Message):
            pass
        return p.decode_event(item)

    def _next_item(self) -> p.Message | str | None:
        assert self._lines is not None  # set by open()
        try:
            return self._decoder.feed(next(self._lines))
        except p.RETRYABLE_ERRORS as exc:
            raise ServiceUnavailableError(f"the event stream broke: {exc!r}") from exc
