"""A Python client of the ask/tell service: :class:`Client` and :class:`AsyncClient` for one
experiment (``armlab serve``, or ``experiment=NAME`` of ``armlab server``), and
:class:`AdminClient` / :class:`AsyncAdminClient` for ``armlab server``'s experiments.

::

    from armlab.client import Client, ExperimentStoppedError

    with Client("http://127.0.0.1:8000") as client:      # token from $ARMLAB_TOKEN
        while True:
            try:
                trial = client.ask(wait=30)               # waits up to 30 s for a free slot
            except ExperimentStoppedError:
                break
            client.tell(trial.trial_id, run(trial.arm_name))
        status = client.status()
        print(f"{status.arm_names[status.recommendation]} (arm {status.recommendation})")  # C (arm 2)

The rules both clients keep:

* **Idempotent retries.**  A request that gets no answer (connection refused or reset,
  timeout) or a 5xx is sent again, the same request, with exponential backoff and jitter,
  bounded by ``retries`` and ``deadline``.  Every ask carries an idempotency key (a new
  random one unless given; ``ask_many``: one per trial), so an answer lost in transit or in
  a crash of the service gives the same trial again; a repeated report is a harmless
  ``duplicate``.  A service restarted on its journal therefore continues under its clients
  without losing or double-counting anything.
* **Typed answers.**  Results are the service's pydantic models
  (:class:`~armlab.service.models.TrialOut`, ``ReportOut``, ``StatusOut``, ``AskBatchOut``,
  ``TellBatchOut``, ``RetireOut``); refusals are :mod:`armlab.client.errors` exceptions carrying the
  service's ``detail`` (and ``state``): 401 :class:`AuthError`, 404
  :class:`UnknownTrialError`, 409 :class:`ConflictError` (reports, retirements) or :class:`NoTrialError`
  / :class:`ExperimentStoppedError` (asks), 422 :class:`InvalidRequestError` /
  :class:`RewardRejectedError`, no usable answer :class:`ServiceUnavailableError`.
* **Events.**  ``events()`` streams ``GET /events`` as :mod:`armlab.events` dataclasses.
* **One protocol.**  Both clients drive the same sans-IO core (``_protocol.py``): requests,
  retries, answers and errors are written once; ``_sync.py`` and ``_async.py`` only block
  or await.

Needs httpx (armlab's ``live`` extra).  The guide is ``docs/client.md``.
"""

from armlab.client._async import AsyncAdminClient, AsyncClient, AsyncEventStream
from armlab.client._sync import AdminClient, Client, EventStream
from armlab.client.errors import (
    AuthError,
    ConflictError,
    ExperimentExistsError,
    ExperimentStoppedError,
    ForbiddenError,
    InvalidExperimentError,
    InvalidRequestError,
    NoTrialError,
    NotFoundError,
    Problem,
    RewardRejectedError,
    ServiceError,
    ServiceUnavailableError,
    UnknownExperimentError,
    UnknownTrialError,
)
from armlab.client.models import CreatedExperiment, ExperimentSummary, IssuedToken

__all__ = [
    "AdminClient",
    "AsyncAdminClient",
    "AsyncClient",
    "AsyncEventStream",
    "AuthError",
    "Client",
    "ConflictError",
    "CreatedExperiment",
    "EventStream",
    "ExperimentExistsError",
    "ExperimentStoppedError",
    "ExperimentSummary",
    "ForbiddenError",
    "InvalidExperimentError",
    "InvalidRequestError",
    "IssuedToken",
    "NoTrialError",
    "NotFoundError",
    "Problem",
    "RewardRejectedError",
    "ServiceError",
    "ServiceUnavailableError",
    "UnknownExperimentError",
    "UnknownTrialError",
]
