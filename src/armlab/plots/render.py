"""Draw figure kinds with matplotlib's object API (no pyplot, no global backend change).

Figures are plain :class:`matplotlib.figure.Figure` objects; ``savefig`` picks the Agg
(PNG) or SVG canvas from the file suffix, so nothing here needs a display or touches
matplotlib's global state.  matplotlib is the optional ``plot`` extra's dependency and is
imported only when a figure is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from armlab.extras import require
from armlab.plots.kinds import FigureKind, Panel, sweep_axis_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

__all__ = ["draw", "draw_stacked"]

#: Curves with at most this many points get a marker on every point.
_MARKER_POINTS = 30


def _figure_class() -> type[Figure]:
    return require("matplotlib.figure", "plot", "plotting").Figure


def draw(
    kind: FigureKind, summary: Mapping[str, Any], *, logx: bool = False, logy: bool = False
) -> Figure:
    """One figure of ``kind``: a grid of panels (several only for per-run sweep panels)."""
    rows, cols = _grid(kind, summary)
    fig = _figure_class()(figsize=(6.4 * cols, 4.2 * rows), layout="constrained")
    _draw_into(fig, kind, summary, logx=logx, logy=logy)
    return fig


def draw_stacked(
    kinds: Sequence[FigureKind], summary: Mapping[str, Any], *, logx: bool = False, logy: bool = False
) -> Figure:
    """Every figure of ``kinds`` in one, one above the other, each with its own title: what
    a single file named for several figures holds."""
    grids = [_grid(kind, summary) for kind in kinds]
    fig = _figure_class()(figsize=(6.4 * max(cols for _, cols in grids), 4.2 * sum(rows for rows, _ in grids)),
                          layout="constrained")
    parts = fig.subfigures(len(kinds), 1, height_ratios=[rows for rows, _ in grids], squeeze=False).ravel()
    for part, kind in zip(parts, kinds, strict=True):
        _draw_into(part, kind, summary, logx=logx, logy=logy)
    return fig


def _grid(kind: FigureKind, summary: Mapping[str, Any]) -> tuple[int, int]:
    """Rows and columns of ``kind``'s panels: at most three side by side."""
    count = len(kind.panels(summary))
    cols = min(3, count)
    return math.ceil(count / cols), cols


def _draw_into(
    fig: Figure | SubFigure, kind: FigureKind, summary: Mapping[str, Any], *, logx: bool, logy: bool
) -> None:
    """Draw ``kind``'s panels and title into ``fig`` (a figure, or a part of one)."""
    panels = kind.panels(summary)
    rows, cols = _grid(kind, summary)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    xlabel = sweep_axis_label(summary["sweep"]["parameter"]) if kind.family == "sweep" else kind.xlabel
    for ax, panel in zip(axes, panels, strict=False):
        categorical = panel.xticklabels is not None
        ax.set_xscale("log" if logx and not categorical else kind.xscale)  # before the ticks: it resets them
        ax.set_yscale("log" if logy else kind.yscale)
        _draw_panel(ax, panel, kind, xlabel)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(_title(kind, summary), fontsize="medium")


def _draw_panel(ax: Axes, panel: Panel, kind: FigureKind, xlabel: str) -> None:
    for series in panel.series:
        marker = "o" if len(series.x) <= _MARKER_POINTS else None
        (line,) = ax.plot(series.x, series.y, marker=marker, markersize=3.5, label=series.label)
        if series.stderr is not None:
            low = [y - e for y, e in zip(series.y, series.stderr, strict=True)]
            high = [y + e for y, e in zip(series.y, series.stderr, strict=True)]
            ax.fill_between(series.x, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    if panel.xticklabels is not None:
        ax.set_xticks(range(len(panel.xticklabels)), panel.xticklabels, rotation=30, ha="right")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(kind.ylabel)
    if panel.title:
        ax.set_title(panel.title, fontsize="medium")
    ax.grid(True, alpha=0.3)
    if panel.series:
        ax.legend(fontsize="small")


def _title(kind: FigureKind, summary: Mapping[str, Any]) -> str:
    bands = "; bands: ±1 standard error" if kind.keys[1] else ""
    return (
        f"{summary.get('name', 'experiment')}: {kind.title}\n"
        f"{summary.get('objective', '')}, {summary.get('replicas', '?')} replicas, "
        f"seed {summary.get('seed', '?')}{bands}"
    )
