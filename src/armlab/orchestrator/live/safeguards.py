"""The safeguards of one live experiment: anytime-valid intervals, the attrition check,
guardrail metrics, anytime stopping and sticky units (docs/safeguards.md).

:class:`LiveSafeguards` holds the state :mod:`armlab.safeguards` computes, per bandit, and is
updated by :class:`~armlab.orchestrator.live.experiment.LiveExperiment` from the events it
applies (never from requests), so a replayed journal rebuilds the same numbers bit for bit.
It never changes the policy's statistics: a run with no safeguard configured makes the same
choices as before they existed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from armlab.adapters.base import RewardRejected, validate_reward
from armlab.orchestrator.journal.schema import Event
from armlab.problem import Problem
from armlab.safeguards import (
    ABANDONED,
    FAILED,
    REPORTED,
    AttritionMonitor,
    BoundedSequences,
    GuardrailConfig,
    GuardrailMonitor,
    StickyUnits,
    StoppingConfig,
    difference_intervals,
    fixed_sample_intervals,
    should_stop,
)
from armlab.stats import ArmStats

#: Results a bandit's anytime sequences may hold back (folded at once when read, or at this many).
MAX_WAITING = 256

__all__ = ["DEFAULT_DELTA", "FIXED_SAMPLE_LABEL", "MAX_METRICS", "MAX_METRIC_NAME", "LiveSafeguards", "metrics_text"]

#: The level of the anytime intervals without ``[stopping]`` (which sets its own delta).
DEFAULT_DELTA = 0.05
#: Most named metrics one report may carry, and the longest name.
MAX_METRICS = 32
MAX_METRIC_NAME = 100
#: What the fixed-sample intervals are, said wherever they are shown.
FIXED_SAMPLE_LABEL = "fixed-sample: valid only at one pre-planned look"
_CONSTRUCTION = "PrPl-EB (Waudby-Smith & Ramdas 2023)"
_OUTCOMES = {"failed": FAILED, "abandoned": ABANDONED}


def metrics_text(metrics: Any, guardrails: Sequence[GuardrailConfig]) -> str:
    """``metrics`` (a mapping of name to finite number) as the journal stores it: compact JSON,
    names sorted; raises :class:`RewardRejected` naming the metric and the fix.  A guarded
    metric with a declared ``range`` must lie in it (a value outside would void its interval)."""
    if not isinstance(metrics, Mapping):
        raise RewardRejected(f"metrics must be an object of name to number, got {type(metrics).__name__}")
    if len(metrics) > MAX_METRICS:
        raise RewardRejected(f"metrics: {len(metrics)} metrics in one report; send at most {MAX_METRICS}")
    ranges = {g.metric: g.range for g in guardrails}
    clean = {}
    for name, value in metrics.items():
        if not isinstance(name, str) or not 0 < len(name) <= MAX_METRIC_NAME:
            raise RewardRejected(f"metrics: a metric name must be text of 1..{MAX_METRIC_NAME} characters, "
                                 f"got {str(name)[:40]!r}")
        number = validate_reward(value, (-math.inf, math.inf), what=f"metrics.{name}")
        declared = ranges.get(name)
        if declared is not None and not declared[0] <= number <= declared[1]:
            raise RewardRejected(f"metrics.{name} = {value!r} is outside the guardrail's range "
                                 f"{list(declared)}; report values in it or widen [[guardrails]] range")
        clean[name] = number
    return json.dumps(dict(sorted(clean.items())), separators=(",", ":"))


def _finite(value_range: tuple[float, float]) -> bool:
    return math.isfinite(value_range[0]) and math.isfinite(value_range[1])


class LiveSafeguards:
    """Per bandit: the anytime sequences of the rewards (when the range is finite), the
    attrition monitor and one monitor per guardrail; the sticky units of the experiment."""

    def __init__(self, problems: Sequence[Problem], guardrails: Sequence[GuardrailConfig] = (),
                 stopping: StoppingConfig | None = None) -> None:
        self.problems = list(problems)
        self.guardrails = list(guardrails)
        self.stopping = stopping
        self.delta = stopping.delta if stopping is not None else DEFAULT_DELTA
        self.sequences = [BoundedSequences(1, p.n_arms, self.delta, p.reward_range) if _finite(p.reward_range)
                          else None for p in problems]
        # without a stopping rule only /status reads the sequences: results wait for it in
        # arrival order (arms, rewards) and are folded a run per arm, the same bits for less
        self.waiting: list[tuple[list[int], list[float]]] = [([], []) for _ in problems]
        self.attrition = [AttritionMonitor(1, p.n_arms) for p in problems]
        self.guards = [[GuardrailMonitor(g, 1, p.n_arms) for g in guardrails] for p in problems]
        self.retirements: list[list[dict[str, Any]]] = [[] for _ in problems]  # guardrail evidence
        self.units = StickyUnits()
        self.repeats = 0  # repeat exposures answered by this process (not journaled: no trial)

    # -- updates from applied events -------------------------------------------------------
    def dispatched(self, event: Event) -> None:
        self.attrition[event.bandit].dispatch(0, event.arm)
        if event.unit is not None:
            self.units.bind(event.unit, event.trial, event.arm, event.bandit)

    def observed(self, event: Event) -> bool:
        """Fold a result (reward and metrics) in; True when the attrition check just fired."""
        bandit, arm = event.bandit, event.arm
        sequences = self.sequences[bandit]
        if sequences is not None:
            if self.stopping is not None:  # read at every ask
                sequences.observe_one(arm, event.reward)
            else:
                arms, rewards = self.waiting[bandit]
                arms.append(arm)
                rewards.append(event.reward)
                if len(arms) >= MAX_WAITING:
                    self._caught_up(bandit)
        if event.metrics is not None and self.guardrails:
            values = json.loads(event.metrics)
            for guard in self.guards[bandit]:
                if (value := values.get(guard.config.metric)) is not None:
                    guard.observe_one(arm, value)
        return self._close(bandit, arm, REPORTED)

    def closed(self, event: Event) -> bool:
        """Count a failed or abandoned trial; True when the attrition check just fired."""
        return self._close(event.bandit, event.arm, _OUTCOMES[event.kind])

    def _close(self, bandit: int, arm: int, outcome: int) -> bool:
        monitor = self.attrition[bandit]
        before = monitor.max_log_e[0]
        monitor.close(0, arm, outcome)
        after = monitor.max_log_e[0]
        # the flag only rises with the maximum: a report that leaves it in place costs no comparison
        return after != before and not monitor.reaches(before) and bool(monitor.reaches(after))

    def retired(self, event: Event) -> dict[str, Any] | None:
        """Keep a guardrail retirement's evidence (journaled as its reason); None for others."""
        if not event.reason.startswith('{"guardrail"'):
            return None
        evidence = {"arm": event.arm, **json.loads(event.reason)["guardrail"]}
        self.retirements[event.bandit].append(evidence)
        return evidence

    # -- decisions -------------------------------------------------------------------------
    def breach(self, bandit: int, arm: int) -> dict[str, Any] | None:
        """The evidence of the first guardrail whose sequence of ``arm`` lies beyond its bound."""
        for guard in self.guards[bandit]:
            if guard.breached()[0, arm]:
                return guard.evidence(arm)
        return None

    def _caught_up(self, bandit: int) -> BoundedSequences | None:
        """``bandit``'s anytime sequences with every result that waited folded in."""
        sequences = self.sequences[bandit]
        arms, rewards = self.waiting[bandit]
        if arms:
            at, values = np.array(arms), np.array(rewards)
            for arm in np.unique(at):
                sequences.observe_run(int(arm), values[at == arm])
            arms.clear()
            rewards.clear()
        return sequences

    def anytime_stop(self, bandit: int, stats: ArmStats) -> int | None:
        """The arm ``[stopping] rule = "anytime"`` stops ``bandit`` with, or None to go on
        (with a stopping rule no result waits: the sequences are up to date)."""
        sequences = self.sequences[bandit]
        if self.stopping is None or sequences is None:
            return None
        stop, best = should_stop(sequences.low, sequences.high, stats.means, stats.active)
        return int(best[0]) if stop[0] else None

    # -- what /status shows ----------------------------------------------------------------
    def intervals(self, bandit: int) -> list[list[float] | None]:
        """Each arm's anytime-valid interval (None before its first result, or without a range)."""
        sequences = self._caught_up(bandit)
        return sequences.intervals() if sequences is not None else [None] * self.problems[bandit].n_arms

    def fixed_sample(self, stats: ArmStats, bandit: int) -> list[list[float] | None]:
        """Normal-approximation 95 % intervals, clipped to the reward range (None below two rewards)."""
        low, high = fixed_sample_intervals(stats.counts, stats.means, stats.variances(ddof=1),
                                           self.problems[bandit].reward_range)
        return [[float(lo), float(hi)] if n >= 2 else None
                for lo, hi, n in zip(low[0], high[0], stats.counts[0], strict=True)]

    def differences(self, bandit: int, stats: ArmStats) -> dict[str, Any] | None:
        """Anytime intervals of ``mu_best - mu_j`` for the active arm of highest mean (None for
        ``best`` itself and arms without results; the whole entry None without a range)."""
        sequences = self._caught_up(bandit)
        if sequences is None:
            return None
        best = int(np.argmax(np.where(stats.active[0], stats.means[0], -np.inf)))
        low, high = difference_intervals(sequences.low, sequences.high, best)
        counts = sequences.counts[0]
        return {"arm": best, "intervals": [
            [float(lo), float(hi)] if arm != best and counts[arm] and counts[best] else None
            for arm, (lo, hi) in enumerate(zip(low[0], high[0], strict=True))
        ]}

    def bandit_status(self, bandit: int, stats: ArmStats) -> dict[str, Any]:
        return {
            "anytime_intervals": self.intervals(bandit),
            "anytime_differences": self.differences(bandit, stats),
            "guardrail_retirements": list(self.retirements[bandit]),
            "checks": {"attrition": self.attrition[bandit].summary()},
        }

    def anytime(self) -> dict[str, Any] | None:
        """What the anytime intervals are (None when no bandit declares a finite range)."""
        if all(s is None for s in self.sequences):
            return None
        return {"level": 1 - self.delta, "simultaneous": True, "construction": _CONSTRUCTION}

    def unit_status(self) -> dict[str, int]:
        return {"bound": len(self.units), "repeat_exposures": self.repeats}
