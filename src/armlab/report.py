"""``armlab report``: one self-contained HTML file for a finished run, or for an offline
evaluation of policies on a decision log (``armlab evaluate --out``).

The file holds everything a reader needs without armlab: the figures (PNG, inline as data
URLs), the table of final metrics, the paired comparisons, the resolved config and the
versions it ran with; for an evaluation, the table of every policy's estimates and one
dot-and-interval panel per estimator.  No scripts, no external resources: it can be attached
to a message or a paper's supplement and opened anywhere.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from armlab.decisionlog.results import read_evaluation
from armlab.errors import ArmlabError
from armlab.extras import require
from armlab.plots import load_summary, plot_summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["render_evaluation_report", "render_file", "render_report"]

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1d232a; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d5dae0; }
table { border-collapse: collapse; margin: .5rem 0; } th, td { padding: .25rem .7rem; text-align: right; }
th:first-child, td:first-child { text-align: left; } tr:nth-child(even) td { background: #f3f5f7; }
img { max-width: 100%; } pre { background: #f3f5f7; padding: .8rem; overflow-x: auto; font-size: 13px; }
.note { color: #5a6470; }
"""


def render_file(source: str | Path) -> str:
    """The report of ``source``: an evaluation written by ``armlab evaluate --out`` (a file,
    or a directory holding ``evaluation.json``), else a run's ``summary.json`` (or its
    directory)."""
    evaluation = read_evaluation(source)
    return render_report(load_summary(source)) if evaluation is None else render_evaluation_report(evaluation)


def render_report(summary: Mapping[str, Any]) -> str:
    """The HTML text of the report of ``summary`` (the content of a ``summary.json``)."""
    name = str(summary.get("name", "experiment"))
    parts = [f"<h1>{_e(name)}</h1>", _header(summary), "<h2>Results</h2>", _results(summary)]
    parts += ["<h2>Paired comparisons</h2>", _comparisons(summary)]
    parts += ["<h2>Figures</h2>", _figures(summary)]
    provenance = summary.get("provenance", {})
    parts += ["<h2>Configuration</h2>", f"<pre>{_e(json.dumps(provenance.get('config', {}), indent=2))}</pre>"]
    versions = {k: v for k, v in provenance.items() if k != "config"}
    parts += ["<h2>Provenance</h2>", _table(["", ""], [[k, str(v)] for k, v in versions.items()])
              if versions else '<p class="note">not recorded (a summary written before provenance existed)</p>']
    return _page(name, parts)


def render_evaluation_report(evaluation: Mapping[str, Any]) -> str:
    """The HTML text of the report of an offline evaluation (the document of
    :mod:`armlab.decisionlog.results`)."""
    name = f"offline evaluation of {evaluation['log']}"
    rows = evaluation["results"]
    parts = [f"<h1>{_e(name)}</h1>", _evaluation_header(evaluation), "<h2>Estimates</h2>", _estimates(rows),
             "<h2>Figures</h2>", _estimates_figure(rows)]
    return _page(name, parts)


def _page(title: str, parts: list[str]) -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}: armlab report</title><style>{_STYLE}</style></head>"
            f"<body>{''.join(parts)}</body></html>\n")


def _e(text: Any) -> str:
    return html.escape(str(text))


def _header(summary: Mapping[str, Any]) -> str:
    budget = summary.get("budget")
    return (f'<p class="note">{_e(summary.get("objective", ""))} objective, {_e(summary.get("replicas", ""))} '
            f"replicas, budget {_e(budget)}, seed {_e(summary.get('seed', ''))}</p>")


def _table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _results(summary: Mapping[str, Any]) -> str:
    rows = []
    for label, entry in summary["policies"].items():
        if "regret_mean" in entry:
            metric, mean, err = "regret", entry["regret_mean"], entry["regret_stderr"]
        elif "error_rate" in entry:
            metric, mean, err = "error rate", entry["error_rate"], entry["error_stderr"]
        else:  # a live run: counts, not curves
            rows.append([label, "trials", str(entry.get("trials", "")), "", str(entry.get("recommendation", ""))])
            continue
        final = mean[-1] if isinstance(mean, list) else mean
        final_err = err[-1] if isinstance(err, list) else err
        rows.append([label, metric, f"{final:.4g}", f"{final_err:.3g}", entry.get("plugin", "")])
    return _table(["policy", "metric", "final", "std. error", "plugin / answer"], rows)


def _comparisons(summary: Mapping[str, Any]) -> str:
    runs = summary.get("runs") or [summary]
    out = []
    for run in runs:
        comparisons = run.get("comparisons")
        if not comparisons:
            continue
        if "sweep_value" in run:
            out.append(f"<h3>{_e(summary['sweep']['parameter'])} = {_e(run['sweep_value'])}</h3>")
        rows = [[f"{p['first']} - {p['second']}", f"{p['difference']:.4g}", f"{p['stderr']:.3g}",
                 f"[{p['ci95'][0]:.4g}, {p['ci95'][1]:.4g}]", f"{p['unpaired_stderr']:.3g}",
                 "yes" if p["significant"] else "no"] for p in comparisons["pairs"]]
        out.append(f'<p class="note">final {_e(comparisons["metric"])}, paired over {comparisons["replicas"]} '
                   "replicas (the policies saw the same rewards)</p>")
        out.append(_table(["first - second", "difference", "std. error", "95% interval", "unpaired s.e.",
                           "significant"], rows))
    return "".join(out) or '<p class="note">one policy: nothing to compare</p>'


def _figures(summary: Mapping[str, Any]) -> str:
    try:
        figures = plot_summary(summary)
    except ArmlabError as exc:
        return f'<p class="note">{_e(exc)}</p>'
    return "".join(_inline(kind, figure) for kind, figure in figures.items())


def _inline(alt: str, figure: Figure) -> str:
    """``figure`` as an ``<img>`` holding its PNG as a data URL."""
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=110, bbox_inches="tight")
    data = base64.b64encode(png.getvalue()).decode("ascii")
    return f'<figure><img alt="{_e(alt)}" src="data:image/png;base64,{data}"></figure>'


def _estimates_figure(rows: Sequence[Mapping[str, Any]]) -> str:
    try:
        return _inline("estimates", _evaluation_figure(rows))
    except ArmlabError as exc:  # matplotlib missing, or nothing to draw
        return f'<p class="note">{_e(exc)}</p>'


def _evaluation_header(evaluation: Mapping[str, Any]) -> str:
    bounds = evaluation.get("reward_range")
    where = (f", experiment {evaluation['experiment']}" if evaluation.get("experiment") else "")
    logged = f", logged by {evaluation['logging_policy']}" if evaluation.get("logging_policy") else ""
    clipped = f", clipped to the reward range [{bounds[0]:g}, {bounds[1]:g}]" if bounds else ""
    estimated = "; some propensities were estimated from draws" if evaluation.get("estimated_propensities") else ""
    return (f'<p class="note">{_e(evaluation["trials"])} completed trials of bandit {_e(evaluation.get("bandit", 0))}'
            f"{_e(where)}{_e(logged)}: each policy's estimated mean reward per trial on them, with its 95 % "
            f"interval{_e(clipped)}{_e(estimated)} (docs/decision-log.md says when each estimate is trustworthy)</p>")


def _estimates(rows: Sequence[Mapping[str, Any]]) -> str:
    cells = []
    for row in rows:
        if row["estimate"] is None:
            cells.append([row["policy"], row["estimator"], "", "", "", "", f"does not apply: {row['reason']}"])
            continue
        low, high = row["interval"]
        cells.append([row["policy"], row["estimator"], f"{row['estimate']:.4f}", f"{row['stderr']:.4f}",
                      f"[{low:.4f}, {high:.4f}]", f"{row['effective_sample_size']:.0f}", ""])
    return _table(["policy", "estimator", "estimate", "std. error", "95% interval", "ESS", ""], cells)


def _evaluation_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """One panel per estimator that gave a number: each policy's estimate as a dot and its
    interval as a line, the policies top to bottom in the table's order, one reward axis."""
    estimators = list(dict.fromkeys(r["estimator"] for r in rows if r["estimate"] is not None))
    if not estimators:
        raise ArmlabError("no figure: no estimator applies to this log")
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    figure = require("matplotlib.figure", "plot", "the report's figures").Figure(
        figsize=(2.6 * len(estimators), 0.45 * len(policies) + 1.4), layout="constrained")
    axes = figure.subplots(1, len(estimators), sharex=True, sharey=True, squeeze=False)[0]
    for ax, estimator in zip(axes, estimators, strict=True):
        for row in rows:
            if row["estimator"] == estimator and row["estimate"] is not None:
                y = policies.index(row["policy"])
                ax.plot(row["interval"], [y, y], color="#5a6470", linewidth=2)
                ax.plot([row["estimate"]], [y], "o", color="#1f5fa8")
        ax.set_title(estimator, fontsize=10)
        ax.set_xlabel("mean reward per trial", fontsize=8)
    axes[0].set_yticks(range(len(policies)), policies)
    axes[0].set_ylim(len(policies) - 0.5, -0.5)
    return figure
