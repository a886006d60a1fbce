"""The answers of ``armlab server``'s admin routes, as the client reads them.

The per-experiment routes answer with the service's own models
(:mod:`armlab.service.models`); these are the admin routes' (``docs/client.md``).  Fields
a newer server adds are ignored, so a client of this version keeps working against it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["CreatedExperiment", "ExperimentSummary", "IssuedToken"]


class ExperimentSummary(BaseModel):
    """One experiment of the server: its ``state`` (``running``, ``stopped``, ``finished``,
    or another live state such as ``budget_spent``), ``trials`` dispatched of its
    ``budget``, the ``recommendation`` as ``/status`` shows it (None before any result),
    when it was ``created`` and last active (UTC), and the process that ``owner``s it
    (None on SQLite storage)."""

    model_config = ConfigDict(extra="ignore")

    name: str
    state: str
    trials: int
    budget: int | None = None
    recommendation: Any = None
    created: datetime
    last_activity: datetime | None = None
    owner: str | None = None


class IssuedToken(BaseModel):
    """A new client token of one experiment: ``token`` is shown this once (the server keeps
    only its hash); ``token_id`` names it for ``revoke_token``."""

    model_config = ConfigDict(extra="ignore")

    token: str
    token_id: str


class CreatedExperiment(IssuedToken):
    """The answer to ``create_experiment``: the experiment's ``name``, its first client token
    (shown once) and its summary."""

    name: str
    experiment: ExperimentSummary
