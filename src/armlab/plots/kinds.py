"""Which figures a summary supports, and the numbers each one draws (no matplotlib here).

A *figure kind* is one row of :data:`FIGURE_KINDS`: the summary keys it reads, axis labels,
default scales, and how the curves are pulled out of a ``summary.json`` mapping.  A kind
applies when its keys are present, so a new metric is one more row.  Two families exist:

* **checkpoint kinds** draw a per-policy list aligned with ``checkpoints`` (one value per
  checkpoint) against the trial count, with a band of +-1 standard error.  In a ``[sweep]``
  summary they draw one panel per run (``runs[i]``), titled with the swept value.
* **sweep kinds** draw one number per run against the swept value (the budget, the number
  of arms...): the last checkpoint of a list, or a scalar entry.

Summary keys read, per policy entry (``summary["policies"][label]``; in a sweep, per run
``summary["runs"][i]["policies"][label]``):

* ``error_rate``, ``error_stderr``: per checkpoint, the fraction of replicas whose
  recommendation is wrong (drawn as a percentage);
* ``regret_mean``, ``regret_stderr``: per checkpoint, the cumulative (pseudo-)regret;
* ``confidence_mean``, ``confidence_stderr``: per checkpoint, the mean eq. (3) confidence
  lower bound of the greedy-confidence-pursuit paper (``[metrics] confidence``, :mod:`armlab.plugins.gcp.confidence_observer`);
* ``bandits_completed_mean``, ``bandits_completed_stderr``: per checkpoint, the number of
  bandits confidently completed so far (multi-bandit runs);
* ``completion_time_median``: scalar, the median completion time in trials (the greedy-confidence-pursuit paper Fig. 2);
* ``stopping_time_mean``, ``stopping_time_stderr``: scalar, trials used by a stopping rule.

Standard errors may be ``None`` (a single replica); values may be ``None`` or NaN where a
metric is undefined: such points are left out of the curve.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FIGURE_KINDS", "FigureKind", "Panel", "Series", "applicable_kinds", "sweep_axis_label"]

Summary = Mapping[str, Any]

#: Sweep fields that mean "number of arms" (they get the axis label ``number of arms K``).
ARM_COUNT_FIELDS = frozenset({"n_arms", "arms", "k", "K", "num_arms", "arm_count"})


@dataclass(frozen=True)
class Series:
    """One curve: a policy's values (and standard errors, or None) at ``x``."""

    label: str
    x: list[float]
    y: list[float]
    stderr: list[float] | None


@dataclass(frozen=True)
class Panel:
    """One set of axes: a title and its curves; ``xticklabels`` for non-numeric sweeps."""

    title: str
    series: list[Series]
    xticklabels: list[str] | None = None


@dataclass(frozen=True)
class FigureKind:
    """A figure the plotting command can draw from a summary."""

    name: str
    title: str
    ylabel: str
    keys: tuple[str, str | None]  # (value key, standard-error key or None)
    family: str  # "checkpoint" or "sweep"
    scale: float = 1.0  # multiply values and errors (100 for percentages)
    xlabel: str = "trials t"
    xscale: str = "linear"
    yscale: str = "linear"
    pick: Callable[[Any], Any] | None = None  # sweep kinds: list value -> the plotted number

    def applies(self, summary: Summary) -> bool:
        """Does ``summary`` hold this kind's value key for at least one policy?"""
        if self.family == "sweep" and "sweep" not in summary:
            return False
        return any(self.keys[0] in entry for run in _runs(summary) for entry in run["policies"].values())

    def panels(self, summary: Summary) -> list[Panel]:
        """The panels to draw (one, or one per sweep run for checkpoint kinds)."""
        if self.family == "sweep":
            return [self._sweep_panel(summary)]
        runs = _runs(summary)
        if "sweep" not in summary:
            return [self._checkpoint_panel(runs[0], "")]
        parameter = summary["sweep"]["parameter"]
        return [self._checkpoint_panel(run, f"{parameter} = {_fmt(run.get('sweep_value'))}") for run in runs]

    def _checkpoint_panel(self, run: Summary, title: str) -> Panel:
        x = [float(c) for c in run["checkpoints"]]
        value_key, err_key = self.keys
        series = []
        for label, entry in run["policies"].items():
            if value_key not in entry:
                continue
            values, errors = entry[value_key], entry.get(err_key) if err_key else None
            if len(values) != len(x) or (errors is not None and len(errors) != len(x)):
                raise ValueError(
                    f"policy {label!r}: {value_key!r} has {len(values)} values but the summary has "
                    f"{len(x)} checkpoints"
                )
            series.append(Series(label, x, self._scaled(values), self._scaled(errors)))
        return Panel(title, series)

    def _sweep_panel(self, summary: Summary) -> Panel:
        values = summary["sweep"]["values"]
        numeric = all(_is_number(v) for v in values)
        x = [float(v) for v in values] if numeric else [float(i) for i in range(len(values))]
        value_key, err_key = self.keys
        labels = list(dict.fromkeys(label for run in _runs(summary) for label in run["policies"]))
        series = []
        for label in labels:
            entries = [run["policies"].get(label, {}) for run in _runs(summary)]
            if not any(value_key in e for e in entries):
                continue
            y = [self._number(e.get(value_key)) for e in entries]
            errs = [self._number(e.get(err_key)) for e in entries] if err_key else None
            has_errors = errs is not None and any(not math.isnan(v) for v in errs)
            series.append(Series(label, x, self._scaled(y), self._scaled(errs) if has_errors else None))
        return Panel("", series, None if numeric else [_fmt(v) for v in values])

    def _number(self, value: Any) -> float:
        if isinstance(value, list):
            value = self.pick(value) if self.pick else None
        return math.nan if value is None else float(value)

    def _scaled(self, values: Sequence[Any] | None) -> list[float] | None:
        if values is None or all(v is None for v in values):
            return None
        return [math.nan if v is None else float(v) * self.scale for v in values]


def _last(values: list[Any]) -> Any:
    return values[-1] if values else None


def _runs(summary: Summary) -> list[Summary]:
    runs = summary.get("runs")
    return list(runs) if runs else [summary]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value: Any) -> str:
    if _is_number(value) or isinstance(value, str):
        return str(value)
    text = json.dumps(value)
    return text if len(text) <= 24 else text[:21] + "..."


def sweep_axis_label(parameter: str) -> str:
    """Axis label of a swept parameter: the budget, the number of arms, or its name."""
    field = parameter.split(".", 1)[-1]
    if parameter == "problem.budget":
        return "budget n (trials)"
    if field in ARM_COUNT_FIELDS:
        return "number of arms K"
    return parameter


#: Every figure kind, in the order figures are drawn.  None of the seed papers' text states
#: a logarithmic axis, so every kind defaults to linear scales (``armlab plot --logx/--logy``).
FIGURE_KINDS: tuple[FigureKind, ...] = (
    FigureKind("error-vs-time", "error vs trials", "error (%)",
               ("error_rate", "error_stderr"), "checkpoint", scale=100.0),
    FigureKind("regret-vs-time", "cumulative regret vs trials", "cumulative regret",
               ("regret_mean", "regret_stderr"), "checkpoint"),
    FigureKind("confidence-vs-time", "confidence lower bound vs trials", "confidence lower bound (eq. 3)",
               ("confidence_mean", "confidence_stderr"), "checkpoint"),
    FigureKind("completed-vs-time", "bandits completed vs trials", "bandits completed",
               ("bandits_completed_mean", "bandits_completed_stderr"), "checkpoint"),
    FigureKind("error-vs-sweep", "error at the budget", "error (%)",
               ("error_rate", "error_stderr"), "sweep", scale=100.0, pick=_last),
    FigureKind("regret-vs-sweep", "cumulative regret at the horizon", "cumulative regret at T",
               ("regret_mean", "regret_stderr"), "sweep", pick=_last),
    FigureKind("completion-vs-sweep", "median completion time", "median completion time (trials)",
               ("completion_time_median", None), "sweep"),
    FigureKind("stopping-vs-sweep", "stopping time", "mean stopping time (trials)",
               ("stopping_time_mean", "stopping_time_stderr"), "sweep"),
)


def applicable_kinds(summary: Summary, names: Sequence[str] | None = None) -> list[FigureKind]:
    """The kinds ``summary`` supports (restricted to ``names`` when given, in table order)."""
    if names:
        unknown = sorted(set(names) - {k.name for k in FIGURE_KINDS})
        if unknown:
            raise ValueError(
                f"unknown figure kind {unknown[0]!r}; available: {', '.join(k.name for k in FIGURE_KINDS)}"
            )
    return [k for k in FIGURE_KINDS if (not names or k.name in names) and k.applies(summary)]
