"""The experiment's history since its start, so a page opened mid-run draws everything: ``GET /history``.

``GET /history?points=N`` (``N`` from 2 to :data:`MAX_POINTS`, default :data:`DEFAULT_POINTS`)
answers one JSON object, a snapshot taken at one instant of the experiment:

* ``name``, ``trials`` (dispatched so far), ``budget``, ``state`` (as ``/status`` says them);
* ``stream_id``: the ``id`` of the last ``/events`` message emitted before the snapshot.  A
  reader connected to ``/events`` before asking for the history finds every event with a
  larger ``id`` missing from it, and every event with this ``id`` or a smaller one already in
  it: nothing is counted twice or lost across the seam (``0`` when nobody was reading);
* ``outcomes``: since the start, ``completed``, ``failed``, ``abandoned``, ``late`` and
  ``overdue`` (failed because no report came in time, ``[feedback] timeout``);
* ``events``: the last :data:`LATEST_EVENTS` events, oldest first, each as ``/events`` sends it
  in ``data`` (``{"event": KIND, ...fields}``) but without ``id`` (they were emitted before the
  reader connected);
* ``bandits``: per bandit ``{"label", "arm_names", "observed", "series"}``, where ``series``
  holds at most ``N`` points, evenly spaced over the rewards observed in that bandit (the first,
  before any reward, and the last, now, always included).  A point is ``{"observed": rewards
  observed in the bandit, "trials": trials dispatched then, "counts", "sums" (total reward),
  "means", "intervals" (95%, None below two rewards), "recommendation"}``, the arrays per arm,
  each as ``/status`` would have said it at that instant;
* ``series``: the first bandit's series (as ``/status`` puts the first bandit's counts on top).

Source: the journal, replayed into a private copy of the experiment with a listener.  It is
the cheapest exact source: the statistics are a pure function of the journaled events, but the
recommendation and the events derived from the policy (eliminations, recommendation changes,
checkpoints) are not, and the live experiment keeps them only at its checkpoints.  The copy
costs one replay of the journal per request (thousands of events per second; the page asks
once when it opens and again when its stream reconnects); the live experiment does no extra
work for the history while nobody asks.  The journal is read once every change made so far is
written, with no change in between, so the snapshot, the live state and ``stream_id`` agree;
the replay then runs in a worker thread, off the event loop.
"""

# no ``from __future__ import annotations``: FastAPI evaluates the route's annotations, and
# they name the route factory's argument ``get_service``
import json
from collections import deque
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import anyio
import numpy as np
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query

from armlab.events import ExperimentEvent, TrialFailed, TrialObserved
from armlab.orchestrator.live import answers
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.live.types import Event
from armlab.service.events import encode_event
from armlab.service.service import Service

__all__ = ["DEFAULT_POINTS", "LATEST_EVENTS", "MAX_POINTS", "add_history_route", "experiment_history",
           "sample_points"]

#: Points per series unless the request asks for another number.
DEFAULT_POINTS = 500
#: The most points a series may be asked for.
MAX_POINTS = 10_000
#: Events sent with the history (the page shows them as its latest events).
LATEST_EVENTS = 50
#: How the reason of a trial failed for want of a report in time starts (the service's and a live run's).
OVERDUE_REASON = "timed out"


def sample_points(total: int, points: int) -> list[int]:
    """At most ``points`` (>= 2) counts from 0 to ``total``, evenly spaced, both ends included."""
    if total + 1 <= points:
        return list(range(total + 1))
    return np.unique(np.round(np.linspace(0, total, points)).astype(np.int64)).tolist()


class _Recorder:
    """Listens to the private copy while it replays: the series points, the latest events, the overdue count."""

    def __init__(self, experiment: LiveExperiment, totals: Sequence[int], points: int) -> None:
        self.experiment = experiment
        self.wanted = [set(sample_points(total, points)) for total in totals]
        self.observed = [0] * len(totals)
        self.sums = [np.zeros(problem.n_arms) for problem in experiment.problems]
        self.series: list[list[dict[str, Any]]] = [[self.point(b)] for b in range(len(totals))]
        self.latest: deque[ExperimentEvent] = deque(maxlen=LATEST_EVENTS)
        self.overdue = 0

    def __call__(self, event: ExperimentEvent) -> None:
        self.latest.append(event)
        if isinstance(event, TrialObserved):
            b = event.bandit
            self.sums[b][event.arm] += event.reward
            self.observed[b] += 1
            if self.observed[b] in self.wanted[b]:
                self.series[b].append(self.point(b))
        elif isinstance(event, TrialFailed) and event.reason.startswith(OVERDUE_REASON):
            self.overdue += 1

    def point(self, b: int) -> dict[str, Any]:
        """Bandit ``b`` now, as ``/status`` shows it."""
        core = self.experiment.core
        stats = core.stats[b]
        return {
            "observed": self.observed[b], "trials": len(self.experiment.trials),
            "counts": stats.counts[0].tolist(), "sums": self.sums[b].tolist(), "means": stats.means[0].tolist(),
            "intervals": self.experiment.confidence_intervals(b), "recommendation": answers.answer(core, b),
        }


def _as_streamed(event: ExperimentEvent) -> dict[str, Any]:
    """``event`` as ``/events`` sends it in ``data``, without the stream's ``id``."""
    frame = encode_event(0, event).decode()
    data = json.loads(frame.split("\ndata: ", 1)[1])
    del data["id"]
    return data


def experiment_history(session: LiveSession, journaled: Sequence[Event], points: int = DEFAULT_POINTS,
                       stream_id: int = 0) -> dict[str, Any]:
    """The history of ``session`` from its ``journaled`` events (all of them, in order): the
    fields of ``GET /history`` (module docstring).  Replays them into a private copy; the
    session itself is only read (its plan and names)."""
    copy = LiveSession.from_plan(session.plan).experiment
    totals = [0] * len(copy.problems)
    for event in journaled:
        if event.kind == "result":
            totals[event.bandit] += 1
    recorder = _Recorder(copy, totals, points)
    copy.add_listener(recorder)
    copy.replay(journaled)
    counters = copy.counters
    bandits = [
        {"label": spec.label, "arm_names": session.arm_names(b), "observed": recorder.observed[b],
         "series": recorder.series[b]}
        for b, spec in enumerate(session.plan.bandits)
    ]
    return {
        "name": session.config.name,
        "trials": len(copy.trials),
        "budget": copy.problem.budget,
        "state": copy.state.value,
        "stream_id": stream_id,
        "outcomes": {"completed": counters.completed, "failed": counters.failed, "abandoned": counters.abandoned,
                     "late": counters.late, "overdue": recorder.overdue},
        "events": [_as_streamed(event) for event in recorder.latest],
        "series": bandits[0]["series"],
        "bandits": bandits,
    }


async def service_history(service: Service, points: int = DEFAULT_POINTS) -> dict[str, Any]:
    """:func:`experiment_history` of the experiment ``service`` serves, at one instant: the
    journal is read once all that changed is written (nothing changes during the read),
    together with the event stream's position; the replay runs in a worker thread."""
    journal = service.session.journal
    if journal is None:
        raise HTTPException(409, "this experiment keeps no journal, so its history is not kept")
    writer = service.writer
    while True:
        await service.durable()
        if writer is None or writer.written == writer.recorded:
            break  # from here to the read nothing awaits, so no change comes in between
    journaled = list(journal.events())
    stream_id = service.hub.sequence
    return await anyio.to_thread.run_sync(experiment_history, service.session, journaled, points, stream_id)


def add_history_route(
    router: APIRouter | FastAPI,
    get_service: Callable[..., Service],
    *,
    dependencies: Sequence[Any] = (),
    responses: dict[int | str, dict[str, Any]] | None = None,
) -> None:
    """Add ``GET /history`` to ``router``: the history of the experiment that the dependency
    ``get_service`` (a FastAPI dependency: a callable, parameters allowed) gives for the request.

    ``dependencies`` and ``responses`` are added to the route (the bearer declaration and the
    error answers of the app it joins); the token itself is checked as for ``/status``.
    """
    @router.get("/history", dependencies=list(dependencies),
                responses={**(responses or {}), 409: {"description": "the experiment keeps no journal"}})
    async def history(
        service: Annotated[Service, Depends(get_service)],
        points: int = Query(DEFAULT_POINTS, ge=2, le=MAX_POINTS,
                            description="the most points per series (evenly spaced over the rewards observed)"),
    ) -> dict[str, Any]:
        """The experiment's history since its start, downsampled: curves (counts, sums, means,
        intervals, recommendation per point), the last 50 events, outcome counts since the
        start, and ``stream_id`` to join ``/events`` without counting an event twice
        (fields: ``armlab.service.history``, docs/dashboard.md)."""
        return await service_history(service, points)
