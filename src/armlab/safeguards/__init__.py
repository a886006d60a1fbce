"""Safeguards of a live experiment: anytime-valid intervals and stopping, the attrition
check, guardrail metrics and sticky units (docs/safeguards.md).

Self-contained statistics over arrays of shape ``(R, K)`` (a live experiment is ``R = 1``);
nothing here knows the live service, the journal or the orchestrator, which call in.
"""

from armlab.safeguards.attrition import ABANDONED, FAILED, REPORTED, AttritionMonitor
from armlab.safeguards.config import GuardrailConfig, StoppingConfig
from armlab.safeguards.confidence_sequences import (
    BoundedSequences,
    SubGaussianSequences,
    difference_intervals,
    fixed_sample_difference,
    fixed_sample_intervals,
)
from armlab.safeguards.guardrails import GuardrailMonitor
from armlab.safeguards.stopping import should_stop
from armlab.safeguards.units import Binding, StickyUnits, UnitAsk

__all__ = [
    "ABANDONED",
    "FAILED",
    "REPORTED",
    "AttritionMonitor",
    "Binding",
    "BoundedSequences",
    "GuardrailConfig",
    "GuardrailMonitor",
    "StickyUnits",
    "StoppingConfig",
    "SubGaussianSequences",
    "UnitAsk",
    "difference_intervals",
    "fixed_sample_difference",
    "fixed_sample_intervals",
    "should_stop",
]
