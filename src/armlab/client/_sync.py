"""The blocking transport: :class:`Client`, :class:`AdminClient` and :class:`EventStream`.

Each method hands one operation of the protocol core (:mod:`armlab.client._protocol`) to
:meth:`Blocking.run`, which performs its effects with ``httpx.Client`` and ``time.sleep``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from contextlib import closing
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from armlab.client import _protocol as p
from armlab.client._calls import ConfigSource
from armlab.client.models import CreatedExperiment, ExperimentSummary, IssuedToken
from armlab.events import ExperimentEvent
from armlab.service.models import AskBatchOut, ReportOut, RetireOut, StatusOut, TellBatchOut, TrialOut

__all__ = ["AdminClient", "Client", "EventStream"]

T = TypeVar("T")


class Blocking:
    """Performs the core's effects by blocking; ``http`` is the ``httpx.Client`` (base URL
    and token set), for requests the clients do not wrap."""

    def _connect(self, protocol: p.Protocol, transport: httpx.BaseTransport | None) -> None:
        self.protocol = protocol
        self.http = httpx.Client(base_url=protocol.url, headers=protocol.headers, timeout=protocol.timeout,
                                 transport=transport)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self.http.close()

    def run(self, operation: p.Operation[T]) -> T:
        """``operation``'s result, its effects performed one by one."""
        reply: Any = None
        with closing(operation):  # an operation left unfinished by an error
            while True:
                try:
                    effect = operation.send(reply)
                except StopIteration as done:
                    return done.value
                reply = self._perform(effect)

    def _perform(self, effect: p.Effect) -> Any:
        try:
            if isinstance(effect, p.Send):
                request = self.http.build_request(effect.method, effect.path, json=effect.body,
                                                  timeout=effect.timeout)
                return self.http.send(request, stream=effect.stream)
            if isinstance(effect, p.Pause):
                return time.sleep(effect.seconds)
            if isinstance(effect, p.Lines):
                return effect.response.iter_lines()
            if isinstance(effect, p.NextLine):
                return next(effect.lines, p.END)
            if effect.read:
                effect.response.read()
            return effect.response.close()
        except p.RETRYABLE_ERRORS as exc:
            return exc


class Client(Blocking, p.ExperimentClientBase):
    """A blocking client of one experiment (see :mod:`armlab.client` for the rules it keeps).

    ``experiment``: None talks to ``armlab serve`` (its routes at the root); a name talks to
    that experiment of ``armlab server`` (``/experiments/{name}/...``, the name quoted).
    ``token`` defaults to ``$ARMLAB_TOKEN`` (an experiment's client token, or the admin
    token); ``insecure=True`` sends none (a service started with ``--insecure``).
    ``timeout`` bounds each try, ``retries`` and ``deadline`` (seconds since the first try;
    None: unbounded) bound the retries of a request that got no answer or a 5xx, spaced by
    exponential backoff from ``backoff`` up to ``max_backoff`` seconds.  ``transport``
    replaces httpx's (tests, ``httpx.MockTransport``).
    """

    def ask(self, key: str | None = None, wait: float = 0.0, unit: str | None = None) -> TrialOut:
        """The next trial to run.

        ``key`` (a new random one by default) is sent with every retry, so an answer lost
        in transit (or in a crash of the service) gives the same trial, not a second one.
        ``wait``: seconds to wait for a free in-flight slot; :class:`NoTrialError`
        (``in_flight_full``) once it ran out, :class:`ExperimentStoppedError` when no trial
        will be dispatched any more.  ``unit`` (a user, a session) keeps the arm sticky: the
        answer's ``exposure`` says whether it is a new trial, the unit's open one, a repeat
        exposure of its closed one, or a new trial after its arm was retired (docs/safeguards.md).
        """
        return self.run(self.experiment_protocol.ask(key, wait, unit))

    def ask_many(self, count: int, keys: list[str] | None = None, units: list[str] | None = None) -> AskBatchOut:
        """Up to ``count`` trials (at most 1000) in one request: ``.trials`` and the state
        after them; fewer when the experiment cannot dispatch more (:class:`NoTrialError`
        when it can dispatch none).  One key per trial (``keys``, or new random ones) makes
        a retried batch return the same trials; ``units[i]`` is the sticky unit of the i-th ask."""
        return self.run(self.experiment_protocol.ask_many(count, keys, units))

    def tell(self, trial_id: int, reward: float, metrics: Mapping[str, float] | None = None) -> ReportOut:
        """Report a trial's reward: ``accepted``, ``duplicate`` (the same report again, as
        after a retry) or ``late`` (the trial had failed or was abandoned: recorded, not
        counted).  Answered once the report is durable.  ``metrics`` (name to number) are
        journaled and watched by the experiment's ``[[guardrails]]``."""
        return self.run(self.experiment_protocol.tell(trial_id, reward, metrics))

    def tell_many(self, reports: Iterable[tuple[int, Any] | Mapping[str, Any]]) -> TellBatchOut:
        """Report many rewards in one request: ``(trial_id, reward)`` pairs (or triples with
        metrics) or dicts with those keys, ``metrics`` optional (at most 1000).  ``.results`` has one entry per report, in order; a bad
        report gets its own status (``conflict``, ``unknown``, ``rejected``), not an error."""
        return self.run(self.experiment_protocol.tell_many(reports))

    def abandon(self, trial_id: int, reason: str = "abandoned by the client") -> ReportOut:
        """Give a pending trial up: its slot is freed and it gets no reward."""
        return self.run(self.experiment_protocol.abandon(trial_id, reason))

    def retire(self, arm: int | str, bandit: int = 0, reason: str = "retired by the operator") -> RetireOut:
        """Retire ``arm`` (index or name) of ``bandit``: never dispatched again, its results
        so far kept; ``status`` says ``retired`` or ``already retired`` (a retry).
        :class:`ConflictError` when the service refuses (unknown arm, the last active one, a
        policy that cannot skip arms)."""
        return self.run(self.experiment_protocol.retire(arm, bandit, reason))

    def status(self) -> StatusOut:
        """The experiment's state, counts, estimates and recommendation."""
        return self.run(self.experiment_protocol.status())

    def trial(self, trial_id: int) -> TrialOut:
        """One trial and its status."""
        return self.run(self.experiment_protocol.trial(trial_id))

    def events(self) -> EventStream:
        """The experiment's events as they happen; use it as ``with client.events() as events:``
        (entering returns once the service confirmed the subscription)."""
        return EventStream(self)


class AdminClient(Blocking, p.AdminClientBase):
    """A blocking client of ``armlab server``'s admin routes: create, list, read, stop and
    delete experiments, issue and revoke their client tokens.

    ``token`` defaults to ``$ARMLAB_ADMIN_TOKEN``; the other arguments are
    :class:`Client`'s.  Talk to one experiment with ``Client(url, token, experiment=name)``.
    """

    def create_experiment(self, name: str, config: ConfigSource) -> CreatedExperiment:
        """Create experiment ``name`` from ``config``: TOML text (a ``str``), the TOML as a dict,
        or a ``pathlib.Path`` to a .toml file.  The answer holds its first client token
        (``.token``, shown this once).  :class:`InvalidExperimentError` lists every problem
        (422); :class:`ExperimentExistsError` when the name is taken (409)."""
        return self.run(self.admin_protocol.create_experiment(name, config))

    def list_experiments(self) -> list[ExperimentSummary]:
        """Every experiment of the server, by name."""
        return self.run(self.admin_protocol.list_experiments())

    def get_experiment(self, name: str) -> ExperimentSummary:
        """One experiment's summary (:class:`UnknownExperimentError` when there is none)."""
        return self.run(self.admin_protocol.get_experiment(name))

    def stop_experiment(self, name: str) -> ExperimentSummary:
        """Stop dispatching trials of ``name`` (reports of trials already out are still
        accepted; the data is kept); its summary after."""
        return self.run(self.admin_protocol.stop_experiment(name))

    def delete_experiment(self, name: str) -> None:
        """Delete a stopped experiment and its data; the name can be used again
        (:class:`ConflictError` while it is not stopped)."""
        return self.run(self.admin_protocol.delete_experiment(name))

    def issue_token(self, name: str) -> IssuedToken:
        """Another client token of ``name`` (``.token``, shown this once; ``.token_id``)."""
        return self.run(self.admin_protocol.issue_token(name))

    def revoke_token(self, name: str, token_id: str) -> None:
        """Revoke a client token of ``name``: it is refused (401) from now on."""
        return self.run(self.admin_protocol.revoke_token(name, token_id))


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
        self._feed = p.EventFeed(client.experiment_protocol)

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        """Subscribe (nothing if already subscribed)."""
        self._client.run(self._feed.open())

    def close(self) -> None:
        """Unsubscribe."""
        self._client.run(self._feed.close())

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> ExperimentEvent | dict[str, Any]:
        event = self._client.run(self._feed.next())
        if event is p.END:
            raise StopIteration
        return event  # type: ignore[return-value]
