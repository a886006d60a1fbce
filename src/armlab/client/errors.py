"""The errors of :mod:`armlab.client`: one class per kind of answer, each with the service's ``detail``.

Every error the client raises on purpose is a :class:`ServiceError` (itself an
:class:`~armlab.errors.ArmlabError`), so one ``except`` catches them all; the subclasses
say what happened precisely enough to act on it without reading status codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from armlab.errors import ArmlabError

__all__ = [
    "AuthError",
    "ConflictError",
    "ExperimentExistsError",
    "ExperimentStoppedError",
    "ForbiddenError",
    "InvalidExperimentError",
    "InvalidRequestError",
    "NoTrialError",
    "NotFoundError",
    "Problem",
    "RewardRejectedError",
    "ServiceError",
    "ServiceUnavailableError",
    "UnknownExperimentError",
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


class ForbiddenError(AuthError):
    """403: the token is valid but not for this: another experiment's client token, or a
    client token on an admin route of ``armlab server``."""


class NotFoundError(ServiceError, LookupError):
    """404: what the request names does not exist (the detail says what)."""


class UnknownTrialError(NotFoundError):
    """404: the service never dispatched a trial with that id."""


class UnknownExperimentError(NotFoundError):
    """404: ``armlab server`` holds no experiment of that name (never created, or deleted)."""


class ConflictError(ServiceError):
    """409: the request contradicts what is recorded (another reward, a reward already
    counted for a trial being abandoned) or what the experiment allows (a retirement it
    refuses; deleting an experiment that is not stopped)."""


class ExperimentExistsError(ConflictError):
    """409 on ``create_experiment``: an experiment of that name exists (delete it first, once
    stopped, or choose another name)."""


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


@dataclass(frozen=True)
class Problem:
    """One problem of an experiment the server refused: the ``field`` at fault (a dotted
    config path such as ``source.arms``), what is wrong and how to fix it."""

    field: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" + (f" (fix: {self.fix})" if self.fix else "")


class InvalidExperimentError(InvalidRequestError):
    """422 on ``create_experiment``: the name or the config has problems.  ``problems`` holds
    every one the server found (a :class:`Problem` each); the message lists them, one a line."""

    def __init__(self, problems: list[Problem], *, status_code: int | None = 422) -> None:
        self.problems = problems
        lines = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(f"the server refused the experiment ({len(problems)} "
                         f"problem{'' if len(problems) == 1 else 's'}):\n{lines}", status_code=status_code)

    def __str__(self) -> str:
        return self.detail


class RewardRejectedError(InvalidRequestError):
    """A reward the service cannot use: not a finite number, or outside the declared range."""


class ServiceUnavailableError(ServiceError):
    """No usable answer: the connection failed or the service answered 5xx on every try,
    until the client's retries or its deadline ran out (the last failure is the cause)."""
