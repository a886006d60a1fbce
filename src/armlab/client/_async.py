"""The awaiting transport (asyncio or trio): :class:`AsyncClient`, :class:`AsyncAdminClient`
and :class:`AsyncEventStream`.

The twins of :mod:`armlab.client._sync`, documented there: each method awaits one
operation of the protocol core (:mod:`armlab.client._protocol`), whose effects
:meth:`Awaiting.run` performs with ``httpx.AsyncClient`` and ``anyio.sleep``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import closing
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import httpx

from armlab.client import _protocol as p
from armlab.client._calls import ConfigSource
from armlab.client.models import CreatedExperiment, ExperimentSummary, IssuedToken
from armlab.events import ExperimentEvent
from armlab.service.models import AskBatchOut, ReportOut, RetireOut, StatusOut, TellBatchOut, TrialOut

__all__ = ["AsyncAdminClient", "AsyncClient", "AsyncEventStream"]

T = TypeVar("T")


class Awaiting:
    """Performs the core's effects by awaiting; ``http`` is the ``httpx.AsyncClient``."""

    def _connect(self, protocol: p.Protocol, transport: httpx.AsyncBaseTransport | None) -> None:
        self.protocol = protocol
        self.http = httpx.AsyncClient(base_url=protocol.url, headers=protocol.headers, timeout=protocol.timeout,
                                      transport=transport)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self.http.aclose()

    async def run(self, operation: p.Operation[T]) -> T:
        """``operation``'s result, its effects awaited one by one."""
        reply: Any = None
        with closing(operation):  # an operation left unfinished by an error or a cancellation
            while True:
                try:
                    effect = operation.send(reply)
                except StopIteration as done:
                    return done.value
                reply = await self._perform(effect)

    async def _perform(self, effect: p.Effect) -> Any:
        try:
            if isinstance(effect, p.Send):
                request = self.http.build_request(effect.method, effect.path, json=effect.body,
                                                  timeout=effect.timeout)
                return await self.http.send(request, stream=effect.stream)
            if isinstance(effect, p.Pause):
                return await anyio.sleep(effect.seconds)
            if isinstance(effect, p.Lines):
                return effect.response.aiter_lines()
            if isinstance(effect, p.NextLine):
                return await anext(effect.lines, p.END)
            if effect.read:
                await effect.response.aread()
            return await effect.response.aclose()
        except p.RETRYABLE_ERRORS as exc:
            return exc


class AsyncClient(Awaiting, p.ExperimentClientBase):
    """The asynchronous twin of :class:`~armlab.client.Client`: the same arguments, the same
    methods as coroutines, ``async with`` and ``aclose()``; ``http`` is an ``httpx.AsyncClient``."""

    async def ask(self, key: str | None = None, wait: float = 0.0, unit: str | None = None) -> TrialOut:
        """The next trial to run (see :meth:`Client.ask`)."""
        return await self.run(self.experiment_protocol.ask(key, wait, unit))

    async def ask_many(self, count: int, keys: list[str] | None = None, units: list[str] | None = None) -> AskBatchOut:
        """Up to ``count`` trials in one request (see :meth:`Client.ask_many`)."""
        return await self.run(self.experiment_protocol.ask_many(count, keys, units))

    async def tell(self, trial_id: int, reward: float, metrics: Mapping[str, float] | None = None) -> ReportOut:
        """Report a trial's reward (see :meth:`Client.tell`)."""
        return await self.run(self.experiment_protocol.tell(trial_id, reward, metrics))

    async def tell_many(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> TellBatchOut:
        """Report many rewards in one request (see :meth:`Client.tell_many`)."""
        return await self.run(self.experiment_protocol.tell_many(reports))

    async def abandon(self, trial_id: int, reason: str = "abandoned by the client") -> ReportOut:
        """Give a pending trial up (see :meth:`Client.abandon`)."""
        return await self.run(self.experiment_protocol.abandon(trial_id, reason))

    async def retire(self, arm: int | str, bandit: int = 0, reason: str = "retired by the operator") -> RetireOut:
        """Retire an arm (see :meth:`Client.retire`)."""
        return await self.run(self.experiment_protocol.retire(arm, bandit, reason))

    async def status(self) -> StatusOut:
        """The experiment's state, counts, estimates and recommendation."""
        return await self.run(self.experiment_protocol.status())

    async def trial(self, trial_id: int) -> TrialOut:
        """One trial and its status."""
        return await self.run(self.experiment_protocol.trial(trial_id))

    def events(self) -> AsyncEventStream:
        """The experiment's events as they happen; use it as
        ``async with client.events() as events:`` (see :class:`~armlab.client.EventStream`)."""
        return AsyncEventStream(self)


class AsyncAdminClient(Awaiting, p.AdminClientBase):
    """The asynchronous twin of :class:`~armlab.client.AdminClient` (same arguments, the same
    methods as coroutines)."""

    async def create_experiment(self, name: str, config: ConfigSource) -> CreatedExperiment:
        """Create an experiment (see :meth:`AdminClient.create_experiment`)."""
        return await self.run(self.admin_protocol.create_experiment(name, config))

    async def list_experiments(self) -> list[ExperimentSummary]:
        """Every experiment of the server, by name."""
        return await self.run(self.admin_protocol.list_experiments())

    async def get_experiment(self, name: str) -> ExperimentSummary:
        """One experiment's summary."""
        return await self.run(self.admin_protocol.get_experiment(name))

    async def stop_experiment(self, name: str) -> ExperimentSummary:
        """Stop dispatching trials of ``name`` (see :meth:`AdminClient.stop_experiment`)."""
        return await self.run(self.admin_protocol.stop_experiment(name))

    async def delete_experiment(self, name: str) -> None:
        """Delete a stopped experiment (see :meth:`AdminClient.delete_experiment`)."""
        return await self.run(self.admin_protocol.delete_experiment(name))

    async def issue_token(self, name: str) -> IssuedToken:
        """Another client token of ``name``, shown this once."""
        return await self.run(self.admin_protocol.issue_token(name))

    async def revoke_token(self, name: str, token_id: str) -> None:
        """Revoke a client token of ``name``."""
        return await self.run(self.admin_protocol.revoke_token(name, token_id))


class AsyncEventStream:
    """The asynchronous :class:`~armlab.client.EventStream`: ``async with``, ``async for``."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._feed = p.EventFeed(client.experiment_protocol)

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Subscribe (nothing if already subscribed)."""
        await self._client.run(self._feed.open())

    async def aclose(self) -> None:
        """Unsubscribe."""
        await self._client.run(self._feed.close())

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> ExperimentEvent | dict[str, Any]:
        event = await self._client.run(self._feed.next())
        if event is p.END:
            raise StopAsyncIteration
        return event  # type: ignore[return-value]
