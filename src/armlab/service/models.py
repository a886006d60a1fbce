"""Request and response bodies of the ask/tell HTTP service (they define its OpenAPI schema)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_MAX_LOADED", "tell_model", "AbandonIn", "AskIn", "ConfidenceOut", "ErrorOut", "ReportOut", "StatusOut", "TellIn", "TrialOut"]

#: Largest request body the service reads (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 64 * 1024
#: Experiments ``armlab server`` keeps open at once (``--max-loaded``).
DEFAULT_MAX_LOADED = 64

Recommendation = int | list[int] | None


def _number_only(value: Any) -> Any:
    if isinstance(value, (str, bool)):
        raise ValueError("Input should be a number, not a string or boolean")
    return value


#: A JSON integer: 3 and 3.0 are accepted (JSON Schema's integer), "3" and true are not.
JsonInt = Annotated[int, BeforeValidator(_number_only)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AskIn(_In):
    key: str | None = Field(
        None, min_length=1, max_length=200,
        description="idempotency key: asking again with the same key returns the same trial "
        "(retry safely after a lost answer)",
    )
    wait: float = Field(0.0, ge=0, le=60, description="seconds to wait for a free in-flight slot")


class TellIn(_In):
    trial_id: JsonInt = Field(ge=0, description="id returned by /ask")
    reward: float = Field(strict=True, allow_inf_nan=False, description="the trial's reward (finite, inside the declared range)")


def tell_model(reward_range: tuple[float, float]) -> type[TellIn]:
    """:class:`TellIn` whose schema carries the experiment's declared reward range."""
    bounds = {key: value for key, value in zip(("ge", "le"), reward_range, strict=True) if math.isfinite(value)}
    if not bounds:
        return TellIn
    field = Field(strict=True, allow_inf_nan=False, description=TellIn.model_fields["reward"].description, **bounds)
    return create_model("TellIn", __base__=TellIn, reward=(float, field))


#: Most trials or reports one batch request may carry.
MAX_BATCH = 1000


class AskBatchIn(_In):
    count: JsonInt = Field(ge=1, le=MAX_BATCH, description="how many trials to dispatch")
    keys: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]],  # the schema says: no repeats
                    Field(json_schema_extra={"uniqueItems": True})] | None = Field(
        None, max_length=MAX_BATCH,
        description="idempotency keys: keys[i] is the key of the i-th trial of the batch (trials past the "
        "list's end get none, keys past count are unused); a retried batch returns the same trials. "
        "One key, one trial: a batch that repeats a key is refused (422), nothing is dispatched",
    )

    @field_validator("keys")
    @classmethod
    def _distinct(cls, keys: list[str] | None) -> list[str] | None:
        """Refuse repeated keys: each key names one trial, so a repeat would get a trial twice."""
        first: dict[str, int] = {}
        for position, key in enumerate(keys or ()):
            if key in first:
                raise ValueError(f"key {key!r} is repeated (positions {first[key]} and {position}); "
                                 "give each trial of the batch its own key")
            first[key] = position
        return keys


class ReportItem(_In):
    trial_id: JsonInt = Field(ge=0, description="id returned by /ask")
    reward: Any = Field(description="the trial's reward; an unusable one is refused for this item only")


class TellBatchIn(_In):
    reports: list[ReportItem] = Field(min_length=1, max_length=MAX_BATCH)


class RetireIn(_In):
    arm: JsonInt | str = Field(description="the arm to retire: its index (0-based) or its name")
    bandit: JsonInt = Field(0, ge=0, description="its bandit (0 in one-bandit experiments)")
    reason: str = Field("retired by the operator", max_length=500, description="why, for the journal")


class RetireOut(BaseModel):
    bandit: int
    arm: int
    arm_name: str
    status: Literal["retired", "already retired"]


class AbandonIn(_In):
    trial_id: JsonInt = Field(ge=0, description="id returned by /ask")
    reason: str = Field("abandoned by the client", max_length=500, description="why, for the journal")


class TrialOut(BaseModel):
    trial_id: int
    arm: int = Field(description="arm index, 0-based")
    arm_name: str
    bandit: int = Field(description="bandit index, 0-based (0 in one-bandit experiments)")
    bandit_label: str = Field(description="the bandit's label from [[bandits]] ('bandit0' in a one-bandit experiment)")
    pull: int = Field(description="how many earlier trials went to this arm (pending ones included)")
    status: Literal["pending", "completed", "failed", "abandoned"]


class ReportOut(BaseModel):
    trial_id: int
    status: Literal["accepted", "duplicate", "late"] = Field(
        description="accepted: counted; duplicate: the same report was already recorded, nothing "
        "changed; late: the trial had failed or was abandoned, the reward is recorded but not counted"
    )
    message: str


class AskBatchOut(BaseModel):
    trials: list[TrialOut] = Field(description="the trials dispatched, fewer than asked when no more could be")
    state: str = Field(description="the experiment's state after the batch")


class ItemReportOut(BaseModel):
    trial_id: int
    status: Literal["accepted", "duplicate", "late", "conflict", "unknown", "rejected"] = Field(
        description="as for /tell, plus: conflict (a different reward is recorded), unknown (no such "
        "trial), rejected (the reward is unusable); only accepted changes the statistics"
    )
    message: str


class TellBatchOut(BaseModel):
    results: list[ItemReportOut] = Field(description="one result per report, in order")


class ErrorOut(BaseModel):
    detail: str = Field(description="what was wrong and how to fix it")
    state: str | None = Field(None, description="experiment state, when the error depends on it")


class ConfidenceOut(BaseModel):
    level: float
    intervals: list[list[float] | None] = Field(
        description="normal-approximation interval of each arm's mean (null below two rewards)"
    )
    policy_stopped: bool = Field(description="a fixed-confidence policy declared itself confident")


class BanditOut(BaseModel):
    label: str
    arm_names: list[str]
    counts: list[int] = Field(description="observed rewards per arm")
    means: list[float]
    pending: list[int] = Field(description="trials in flight per arm")
    intervals: list[list[float] | None] = Field(description="95% normal-approximation interval per arm (None below two rewards)")
    recommendation: Recommendation
    retired: list[int] = Field(description="arms retired by the operator (never dispatched again)")
    stopped: bool = Field(description="its stopping rule is confident: it takes no more trials")


class StopOut(BaseModel):
    trials: int = Field(description="trials dispatched when the experiment stopped")
    reason: Literal["confident", "allocator"] = Field(
        description="confident: a fixed-confidence rule's test passed; allocator: the allocator ended the run"
    )
    bandit: int = Field(description="the bandit whose rule was confident")
    recommendation: Recommendation | list[Recommendation] = Field(description="the answer when it stopped")
    delta: float | None = Field(description="the rule's error probability: its answer is right with probability >= 1 - delta")


class StatusOut(BaseModel):
    name: str
    policy: str
    source: str
    state: Literal["running", "in_flight_full", "budget_spent", "stopped", "finished"]
    budget: int
    dispatched: int
    in_flight_limit: int
    pending: int
    pending_trials: list[int]
    trials: int = Field(description="trials that ended (completed, failed or abandoned)")
    completed: int
    failed: int
    abandoned: int
    late: int
    arm_names: list[str]
    counts: list[int]
    means: list[float]
    recommendation: Recommendation | list[Recommendation] = Field(
        description="the first bandit's answer, or with several bandits one answer per bandit"
    )
    recommendations: list[Recommendation | list[Recommendation]] = Field(
        description="the recommendation at each checkpoint passed (several bandits: one per bandit)"
    )
    bandits: list[BanditOut] = Field(description="every bandit's arms and answer (one entry per bandit)")
    confidence: ConfidenceOut
    stop: StopOut | None = Field(None, description="why and when a stopping rule ended the experiment (None: it did not)")
