"""The errors of :mod:`armlab.client`: one class per kind of answer, each with the service's ``detail``.

Every error the client raises on purpose is a :class:`ServiceError` (itself an
:class:`~armlab.errors.ArmlabError`), so one ``except`` catches them all; the subclasses
say what happened precisely enough to act on it without reading status codes.
"""

from __future__ import annotations

from armlab.errors import ArmlabError

__all__ = [
    "AuthError",
    "ConflictError",
    "ExperimentStoppedError",
    "InvalidRequestError",
    "NoTrialError",
    "RewardRejectedError",
    "ServiceError",
    "ServiceUnavailableError",
    "UnknownTrialError",
]


class ServiceError(ArmlabError):
    """The service refused a request, or gave no usable answer.

    ``detail`` is the service's explanation (or the client's, when no answer came),
    ``status_code`` the HTTP status (None without an answer) and ``state`` the experiment's
    state when the answer depends on it (``running``, ``in_flight_full``, ``budget_spent``,
    ``stopped``, ``finished``).
    """

    def __init__(self, detail: str, *, status_code: int | None = None, state: str | None = None) -> None:
        super().__init__(detail if status_code is None else f"{detail} (HTTP {status_code})")
        self.detail = detail
        self.status_code = status_code
        self.state = state


class AuthError(ServiceError):
    """401: the service wants another bearer token than the one sent."""


class UnknownTrialError(ServiceError, LookupError):
    """404: the service never dispatched a trial with that id."""


class ConflictError(ServiceError):
    """409 on a report or a retirement: it contradicts what is recorded (another reward, a
    reward already counted for a trial being abandoned) or what the experiment allows."""


class NoTrialError(ServiceError):
    """409 on an ask: no trial can be dispatched now; ``state`` says why.

    Raised as such for ``in_flight_full``: every in-flight slot was still taken when the
    ask's ``wait`` ran out, and a later ask may succeed.
    """


class ExperimentStoppedError(NoTrialError):
    """No trial will ever be dispatched again: ``state`` is ``budget_spent`` or ``stopped``
    (trials still pending may be reported) or ``finished`` (nothing pending)."""


class InvalidRequestError(ServiceError, ValueError):
    """422: the service could not use the request (the detail names the field)."""


class RewardRejectedError(InvalidRequestError):
    """A reward the service cannot use: not a finite number, or outside the declared range."""


class ServiceUnavailableError(ServiceError):
    """No usable answer: the connection failed or the service answered 5xx on every try,
    until the client's retries or its deadline ran out (the last failure is the cause)."""
