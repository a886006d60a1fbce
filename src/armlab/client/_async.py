"""The asynchronous client, :class:`AsyncClient`, and its event stream (asyncio or trio)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
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

__all__ = ["AsyncClient", "AsyncEventStream"]

T = TypeVar("T")


class AsyncClient(p.ClientBase):
    """The asynchronous twin of :class:`~armlab.client.Client`: the same arguments, the same
    methods as coroutines, ``async with`` and ``aclose()``; ``http`` is an ``httpx.AsyncClient``."""

    def __init__(
        self, url: str = p.DEFAULT_URL, token: str | None = None, *, insecure: bool = False,
        timeout: float | httpx.Timeout = 10.0, retries: int | None = 20, deadline: float | None = 60.0,
        backoff: float = 0.05, max_backoff: float = 2.0, transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(url, token, insecure=insecure, timeout=timeout, retries=retries, deadline=deadline,
                         backoff=backoff, max_backoff=max_backoff)
        self.http = httpx.AsyncClient(base_url=url, headers=self.headers, timeout=self.timeout, transport=transport)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self.http.aclose()

    # -- the API (documented on Client) -----------------------------------------------------

    async def ask(self, key: str | None = None, wait: float = 0.0) -> TrialOut:
        """The next trial to run (see :meth:`Client.ask`)."""
        key = p.new_key() if key is None else key
        until = time.monotonic() + wait
        while True:
            sent_at = time.monotonic()
            held = min(max(0.0, until - sent_at), p.MAX_SERVER_WAIT)
            try:
                return await self._send(p.ask_call(key, held))
            except NoTrialError as exc:
                delay = p.next_ask_delay(exc, until, sent_at, held)
                if delay is None:
                    raise
            await anyio.sleep(delay)

    async def ask_many(self, count: int, keys: list[str] | None = None) -> AskBatchOut:
        """Up to ``count`` trials in one request (see :meth:`Client.ask_many`)."""
        return await self._send(p.ask_many_call(count, keys))

    async def tell(self, trial_id: int, reward: float) -> ReportOut:
        """Report a trial's reward (see :meth:`Client.tell`)."""
        return await self._send(p.tell_call(trial_id, reward))

    async def tell_many(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> TellBatchOut:
        """Report many rewards in one request (see :meth:`Client.tell_many`)."""
        batch = p.TellBatch(reports)
        call = batch.call()
        return batch.merge(None if call is None else await self._send(call))

    async def abandon(self, trial_id: int, reason: str = "abandoned by the client") -> ReportOut:
        """Give a pending trial up (see :meth:`Client.abandon`)."""
        return await self._send(p.abandon_call(trial_id, reason))

    async def retire(self, arm: int | str, bandit: int = 0, reason: str = "retired by the operator") -> RetireOut:
        """Retire an arm (see :meth:`Client.retire`)."""
        return await self._send(p.retire_call(arm, bandit, reason))

    async def status(self) -> StatusOut:
        """The experiment's state, counts, estimates and recommendation."""
        return await self._send(p.status_call())

    async def trial(self, trial_id: int) -> TrialOut:
        """One trial and its status."""
        return await self._send(p.trial_call(trial_id))

    def events(self) -> AsyncEventStream:
        """The experiment's events as they happen; use it as
        ``async with client.events() as events:`` (see :class:`~armlab.client.EventStream`)."""
        return AsyncEventStream(self)

    # -- sending ----------------------------------------------------------------------------

    async def _send(self, call: p.Call[T]) -> T:
        response = await self._request(call.method, call.path, call.body, p.with_held_time(self.timeout, call.held))
        return p.read(call, response)

    async def _request(self, method: str, path: str, body: Any, timeout: httpx.Timeout,
                       stream: bool = False) -> httpx.Response:
        """Send until an answer below 500 comes, or the retries or the deadline run out."""
        attempts = self.backoff.start(self.rng)
        while True:
            request = self.http.build_request(method, path, json=body, timeout=timeout)
            try:
                response = await self.http.send(request, stream=stream)
            except p.RETRYABLE_ERRORS as exc:
                failure: httpx.Response | Exception = exc
            else:
                if not p.retryable(response):
                    return response
                await response.aread()
                await response.aclose()
                failure = response
            delay = attempts.next_delay()
            if delay is None:
                raise p.gave_up(method, path, attempts, failure)
            await anyio.sleep(delay)


class AsyncEventStream:
    """The asynchronous :class:`~armlab.client.EventStream`: ``async with``, ``async for``."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._response: httpx.Response | None = None
        self._lines: AsyncIterator[str] | None = None
        self._decoder = p.SSEDecoder()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Subscribe (nothing if already subscribed)."""
        if self._response is not None:
            return
        timeout = p.with_read(self._client.timeout, p.EVENTS_READ_TIMEOUT)
        response = await self._client._request("GET", "/events", None, timeout, stream=True)
        if not response.is_success:
            await response.aread()
            await response.aclose()
            raise p.error_for(response)
        self._response, self._lines = response, response.aiter_lines()
        try:
            while await self._next_item() != p.CONNECTED:
                pass
        except StopAsyncIteration:
            raise ServiceUnavailableError(p.ENDED_BEFORE_CONNECTED) from None

    async def aclose(self) -> None:
        """Unsubscribe."""
        if self._response is not None:
            await self._response.aclose()

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> ExperimentEvent | dict[str, Any]:
        await self.open()
        while not isinstance(item := await self._next_item(), p.Message):
            pass
        return p.decode_event(item)

    async def _next_item(self) -> p.Message | str | None:
        assert self._lines is not None  # set by open()
        try:
            return self._decoder.feed(await anext(self._lines))
        except p.RETRYABLE_ERRORS as exc:
            raise ServiceUnavailableError(f"the event stream broke: {exc!r}") from exc
