"""The tables of an experiment file: ``[problem]``, ``[feedback]``, ``[metrics]``, plugin
tables, ``[[bandits]]`` and ``[sweep]`` (the whole file is :class:`armlab.config.ExperimentConfig`).

Every model is frozen, refuses unknown fields and non-finite numbers (TOML has ``nan`` and
``inf`` literals; a non-finite mean or threshold would run and report meaningless numbers).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from armlab.problem import Objective

__all__ = [
    "BANDITS_SOURCE",
    "BanditEntry",
    "FeedbackConfig",
    "MetricsConfig",
    "PluginEntry",
    "PolicyEntry",
    "ProblemConfig",
    "SweepConfig",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ProblemConfig(_Strict):
    """``[problem]``: what is measured and how many trials each run may use."""

    objective: Objective = Field(description="regret | best-arm | top-m | threshold")
    budget: int = Field(gt=0, description="trials per run (the horizon T or budget n)")
    m: int | None = Field(None, ge=1, description="size of the set to find (top-m)")
    epsilon: float = Field(0.0, ge=0, description="tolerance: arms within epsilon of the m-th best count as correct")
    threshold: float | None = Field(None, description="the threshold tau (threshold objective)")
    delta: float | None = Field(None, gt=0, lt=1, description="confidence parameter of fixed-confidence rules")

    @model_validator(mode="after")
    def _objective_fields(self) -> ProblemConfig:
        if self.objective is Objective.TOP_M and self.m is None:
            raise ValueError("objective 'top-m' needs m (how many arms to find), e.g. m = 3")
        if self.objective is Objective.THRESHOLD and self.threshold is None:
            raise ValueError("objective 'threshold' needs threshold, e.g. threshold = 0.5")
        return self


class FeedbackConfig(_Strict):
    """``[feedback]``: when results become visible and how many trials may be pending."""

    delay: int = Field(0, ge=0, description="steps before a result is observed (0: before the next choice)")
    delay_model: Literal["fixed", "uniform", "batch"] = Field(
        "fixed",
        description="fixed: every result waits `delay` steps; uniform: a random delay in "
        "[delay, delay_max]; batch: results are released together every `delay` trials",
    )
    delay_max: int | None = Field(None, ge=0, description="upper end of the uniform delay")
    in_flight: int | None = Field(
        None, ge=1, description="trials pending per replica; default: enough that the delay never stalls"
    )
    timeout: float | None = Field(None, gt=0, description="live runs: seconds before a trial counts as failed")

    @model_validator(mode="after")
    def _delay_fields(self) -> FeedbackConfig:
        if self.delay_model == "uniform":
            if self.delay_max is None or self.delay_max < self.delay:
                raise ValueError("delay_model 'uniform' needs delay_max >= delay, e.g. delay = 0, delay_max = 10")
        elif self.delay_max is not None:
            raise ValueError(f"delay_max only applies to delay_model 'uniform', not {self.delay_model!r}")
        if self.delay_model == "batch" and self.delay < 1:
            raise ValueError("delay_model 'batch' needs delay >= 1 (the batch size)")
        return self

    @property
    def longest_delay(self) -> int:
        """The largest number of steps any result can wait."""
        if self.delay_model == "uniform":
            assert self.delay_max is not None
            return self.delay_max
        return self.delay

    @property
    def effective_in_flight(self) -> int:
        """``in_flight``, or the smallest value with which the delay model never stalls."""
        if self.in_flight is not None:
            return self.in_flight
        return self.delay if self.delay_model == "batch" else self.longest_delay + 1


class MetricsConfig(_Strict):
    """``[metrics]``: extra metrics tracked along simulated runs (each costs time per step).

    ``confidence = true`` tracks the greedy-confidence-pursuit paper's eq. (3) confidence bound for every replica and
    reports it per checkpoint plus completion times; see
    :mod:`armlab.plugins.gcp.confidence_observer` for the definition and the summary keys.
    """

    confidence: bool = Field(False, description="track the eq. (3) confidence bound and completion times")
    confidence_level: float = Field(0.98, gt=0, lt=1, description="confidence a run must hold to complete")
    confidence_hold: int = Field(100, ge=0, description="trials the level must be held before the completion trial")


class PluginEntry(BaseModel):
    """A plugin table: ``plugin`` names it; every other key is one of its parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)

    plugin: str = Field(min_length=1, description="registered plugin name (see `armlab plugins`)")

    @property
    def params(self) -> dict[str, Any]:
        """The plugin's own parameters (everything but the framework's keys)."""
        return dict(self.model_extra or {})


class PolicyEntry(PluginEntry):
    """A ``[[policies]]`` entry; ``label`` tells apart two runs of one plugin.

    In a multi-bandit experiment each compared method is an (allocator, arm rule) pair: an
    inline ``allocator = {plugin = "gcp-bayes"}`` overrides the experiment's ``[allocator]``
    for this entry only.
    """

    label: str | None = Field(None, min_length=1, description="name in results; default: the plugin name")
    allocator: PluginEntry | None = Field(
        None, description="this entry's budget allocator (inline table); default: the [allocator] table"
    )

    @property
    def display_label(self) -> str:
        if self.label:
            return self.label
        return f"{self.allocator.plugin}/{self.plugin}" if self.allocator else self.plugin


#: ``source`` of a multi-bandit experiment: a placeholder naming the ``[[bandits]]`` list (each
#: bandit has its own source), so that ``config.source`` is always a plugin table.
BANDITS_SOURCE = "bandits"


class BanditEntry(_Strict):
    """A ``[[bandits]]`` entry: one bandit of a multi-bandit experiment (or ``count`` alike).

    Bandits share the trial budget of ``[problem]``; each has its own source (arm counts may
    differ), and may override the objective and ``m`` of ``[problem]``.  ``target_arm`` names
    the arm a *targeted* experiment hopes is best (the greedy-confidence-pursuit paper, section 5.1): targeted allocators
    pursue it, and the summary counts completions among bandits where it truly is best.
    Entries with ``count > 1`` stand for that many bandits whose instances are drawn
    independently (a random source gives each its own instance).
    """

    source: PluginEntry = Field(description="this bandit's reward source (inline table)")
    count: int = Field(1, ge=1, description="number of bandits this entry stands for")
    label: str | None = Field(None, min_length=1, description="name in results; default: bandit<index>")
    objective: Objective | None = Field(None, description="best-arm | top-m; default: [problem] objective")
    m: int | None = Field(None, ge=1, description="size of the top-m set; default: [problem] m")
    target_arm: int | None = Field(
        None, ge=0, description="0-based arm pursued by targeted allocators (best-arm objective only)"
    )

    @model_validator(mode="after")
    def _identification_only(self) -> BanditEntry:
        if self.objective not in (None, Objective.BEST_ARM, Objective.TOP_M):
            raise ValueError(
                f"a bandit's objective is 'best-arm' or 'top-m' (identification), not {self.objective.value!r}"
            )
        return self


class SweepConfig(_Strict):
    """``[sweep]``: run the experiment once per value of one parameter (e.g. error vs budget).

    Each value is a separate run from scratch, so budget-dependent schedules are honoured.
    """

    parameter: str = Field(
        pattern=r"^(problem|source)\.[A-Za-z_][A-Za-z0-9_]*$",
        description="dotted name of the swept field: problem.<field> or source.<parameter>",
    )
    values: list[Any] = Field(min_length=1, description="values the parameter takes, one run each")
