"""The safeguard tables of an experiment file: ``[[guardrails]]`` and ``[stopping]``.

Frozen, strict models like :mod:`armlab.config_tables`: unknown fields and non-finite numbers
are refused, and every error names the field and the fix.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["GuardrailConfig", "StoppingConfig"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class GuardrailConfig(_Strict):
    """A ``[[guardrails]]`` entry: an arm whose metric mean is surely beyond the bound is retired.

    ``max = 300`` retires an arm once the anytime-valid sequence of its metric mean lies wholly
    above 300 (``min`` below).  How the metric's values spread must be declared, because an
    interval of an unbounded metric needs it: ``range = [0, 1000]`` for values that never leave
    a range (empirical-Bernstein sequence), or ``scale = 50`` for values within about ``scale``
    of their mean (sub-Gaussian sigma; normal-mixture sequence).
    """

    metric: str = Field(min_length=1, description="name of the metric reports carry, e.g. latency_ms")
    max: float | None = Field(None, description="retire an arm whose mean is surely above this")
    min: float | None = Field(None, description="retire an arm whose mean is surely below this")
    delta: float = Field(0.05, gt=0, lt=1, description="chance that some arm within the bound is retired")
    range: tuple[float, float] | None = Field(None, description="[low, high] every value lies in")
    scale: float | None = Field(None, gt=0, description="sub-Gaussian sigma of the values")

    @model_validator(mode="after")
    def _one_bound_one_spread(self) -> GuardrailConfig:
        if (self.max is None) == (self.min is None):
            raise ValueError(f"guardrail {self.metric!r} needs exactly one of max or min, e.g. max = 300")
        if (self.range is None) == (self.scale is None):
            raise ValueError(
                f"guardrail {self.metric!r} needs exactly one of range or scale: range = [0, 1000] "
                "(values never leave it) or scale = 50 (values' sub-Gaussian sigma)"
            )
        if self.range is not None:
            low, high = self.range
            if not low < high:
                raise ValueError(
                    f"guardrail {self.metric!r}: range = {list(self.range)} needs low < high, e.g. [0, 1000]"
                )
            if not low <= self.bound <= high:
                raise ValueError(
                    f"guardrail {self.metric!r}: the bound {self.bound} lies outside range = {list(self.range)}; "
                    "widen the range or move the bound inside it"
                )
        return self

    @property
    def bound(self) -> float:
        """The bound, whichever side it is on."""
        return self.max if self.max is not None else self.min  # type: ignore[return-value]

    @property
    def side(self) -> Literal["max", "min"]:
        return "max" if self.max is not None else "min"


class StoppingConfig(_Strict):
    """``[stopping]``: ``rule = "anytime"`` stops a bandit once its recommended arm's
    difference sequence excludes 0 against every other active arm; the chance of stopping
    with a wrong best arm is at most ``delta``, however often one looks."""

    rule: Literal["anytime"] = Field(description='the stopping rule; "anytime" is the one there is')
    delta: float = Field(0.05, gt=0, lt=1, description="chance of stopping with a wrong best arm")
