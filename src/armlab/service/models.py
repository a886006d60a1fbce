"""Request and response bodies of the ask/tell HTTP service (they define its OpenAPI schema)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator

from armlab.orchestrator.live.safeguards import FIXED_SAMPLE_LABEL

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
#: A sticky unit's id.
Unit = Annotated[str, Field(min_length=1, max_length=200)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AskIn(_In):
    key: str | None = Field(
        None, min_length=1, max_length=200,
        description="idempotency key: asking again with the same key returns the same trial "
        "(retry safely after a lost answer)",
    )
    wait: float = Field(0.0, ge=0, le=60, description="seconds to wait for a free in-flight slot")
    unit: Unit | None = Field(
        None, description="sticky unit (a user, a session): its first ask binds it to an arm; later asks "
        "return its open trial, or its arm again as a repeat exposure (docs/safeguards.md)",
    )


#: A report's named metrics besides the reward (checked by the experiment: finite numbers,
#: at most 32, inside a guardrail's declared range).
Metrics = dict[Annotated[str, Field(min_length=1, max_length=100)], Any]
_METRICS = "named metrics besides the reward, e.g. {\"latency_ms\": 212}: journaled, and watched by [[guardrails]]"


class TellIn(_In):
    trial_id: JsonInt = Field(ge=0, description="id returned by /ask")
    reward: float = Field(strict=True, allow_inf_nan=False, description="the trial's reward (finite, inside the declared range)")
    metrics: Metrics | None = Field(None, max_length=32, description=_METRICS)


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

    units: Annotated[list[Unit], Field(json_schema_extra={"uniqueItems": True})] | None = Field(
        None, max_length=MAX_BATCH,
        description="sticky units: units[i] is the unit of the i-th ask of the batch (as /ask's unit); "
        "a batch that repeats a unit is refused (422)",
    )

    @field_validator("keys", "units")
    @classmethod
    def _distinct(cls, values: list[str] | None, info: Any) -> list[str] | None:
        """Refuse repeats: each key names one trial and each unit one ask, so a repeat would
        ask twice for the same thing."""
        what = info.field_name[:-1]
        first: dict[str, int] = {}
        for position, value in enumerate(values or ()):
            if value in first:
                raise ValueError(f"{what} {value!r} is repeated (positions {first[value]} and {position}); "
                                 f"give each ask of the batch its own {what}")
            first[value] = position
        return values


class ReportItem(_In):
    trial_id: JsonInt = Field(ge=0, description="id returned by /ask")
    reward: Any = Field(description="the trial's reward; an unusable one is refused for this item only")
    metrics: Metrics | None = Field(None, max_length=32, description=_METRICS)


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
    unit: str | None = Field(None, description="the sticky unit the trial was dispatched for")
    exposure: Literal["new", "open", "repeat", "rebound"] = Field(
        "new", description="for an ask: new (this trial was dispatched for it), open (the unit's trial is still "
        "open), repeat (the unit's closed trial: its arm again, nothing counted), rebound (a new trial: the "
        "unit's arm was retired)",
    )


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
    label: str = Field(FIXED_SAMPLE_LABEL, description="what these intervals are worth")
    intervals: list[list[float] | None] = Field(
        description="normal-approximation interval of each arm's mean, clipped to the reward range "
        "(null below two rewards); valid only at one pre-planned look"
    )
    policy_stopped: bool = Field(description="a fixed-confidence policy declared itself confident")


Intervals = list[list[float] | None]


class AttritionOut(BaseModel):
    p_value: float = Field(description="anytime-valid p-value of 'every arm's trials come back equally often'")
    threshold: float = Field(description="the check fires once p_value reaches it")
    flagged: bool
    dispatched: list[int]
    reported: list[int]
    failed: list[int]
    abandoned: list[int]


class ChecksOut(BaseModel):
    attrition: AttritionOut


class AnytimeOut(BaseModel):
    level: float = Field(description="all arms' intervals hold together, at every time, with this probability")
    simultaneous: bool
    construction: str


class DifferencesOut(BaseModel):
    arm: int = Field(description="the active arm of highest mean")
    intervals: Intervals = Field(description="anytime interval of mean[arm] - mean[j] per arm j (null: j = arm, "
                                 "or no result yet)")


class UnitsOut(BaseModel):
    bound: int = Field(description="units bound to an arm")
    repeat_exposures: int = Field(description="repeat exposures answered since this process started (not journaled)")


class BanditOut(BaseModel):
    label: str
    arm_names: list[str]
    counts: list[int] = Field(description="observed rewards per arm")
    means: list[float]
    pending: list[int] = Field(description="trials in flight per arm")
    intervals: list[list[float] | None] = Field(description="95% normal-approximation interval per arm (None below two rewards)")
    recommendation: Recommendation
    retired: list[int] = Field(description="arms retired by the operator or a guardrail (never dispatched again)")
    stopped: bool = Field(description="its stopping rule is confident: it takes no more trials")
    anytime_intervals: Intervals = Field(description="anytime-valid interval per arm (null before its first result)")
    anytime_differences: DifferencesOut | None = Field(description="null without a finite reward range")
    guardrail_retirements: list[dict[str, Any]] = Field(
        description="arms a guardrail retired, with the evidence: arm, metric, bound, delta, interval, n")
    checks: ChecksOut


class StopOut(BaseModel):
    trials: int = Field(description="trials dispatched when the experiment stopped")
    reason: Literal["confident", "anytime", "allocator"] = Field(
        description="confident: a fixed-confidence rule's test passed; anytime: [stopping] rule = \"anytime\" "
        "found best_arm surely best; allocator: the allocator ended the run"
    )
    bandit: int = Field(description="the bandit whose rule was confident")
    recommendation: Recommendation | list[Recommendation] = Field(description="the answer when it stopped")
    delta: float | None = Field(description="the rule's error probability: its answer is right with probability >= 1 - delta")
    best_arm: int | None = Field(None, description="anytime stopping: the arm found best")


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
    anytime_intervals: Intervals = Field(description="the first bandit's anytime-valid interval per arm "
                                         "(null before its first result, or without a finite reward range)")
    anytime: AnytimeOut | None = Field(description="what the anytime intervals are (null: no finite reward range)")
    checks: ChecksOut = Field(description="the first bandit's checks (each bandit's are in bandits[i].checks)")
    guardrails: list[dict[str, Any]] = Field(description="the [[guardrails]] of the experiment")
    units: UnitsOut
    stop: StopOut | None = Field(None, description="why and when a stopping rule ended the experiment (None: it did not)")
