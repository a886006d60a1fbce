"""``armlab report``: one self-contained HTML file for a finished run.

The file holds everything a reader needs without armlab: the figures (PNG, inline as data
URLs), the table of final metrics, the paired comparisons, the resolved config and the
versions it ran with.  No scripts, no external resources: it can be attached to a message
or a paper's supplement and opened anywhere.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping
from typing import Any

from armlab.errors import ArmlabError
from armlab.plots import plot_summary

__all__ = ["render_report"]

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1d232a; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d5dae0; }
table { border-collapse: collapse; margin: .5rem 0; } th, td { padding: .25rem .7rem; text-align: right; }
th:first-child, td:first-child { text-align: left; } tr:nth-child(even) td { background: #f3f5f7; }
img { max-width: 100%; } pre { background: #f3f5f7; padding: .8rem; overflow-x: auto; font-size: 13px; }
.note { color: #5a6470; }
"""


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
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(name)}: armlab report</title><style>{_STYLE}</style></head>"
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
    out = []
    for kind, figure in figures.items():
        png = io.BytesIO()
        figure.savefig(png, format="png", dpi=110, bbox_inches="tight")
        data = base64.b64encode(png.getvalue()).decode("ascii")
        out.append(f'<figure><img alt="{_e(kind)}" src="data:image/png;base64,{data}"></figure>')
    return "".join(out)
