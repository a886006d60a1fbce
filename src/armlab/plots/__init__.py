"""The figures the seed papers show, drawn from a ``summary.json``.

``plot_summary(summary)`` returns one matplotlib figure per applicable figure kind (see
:mod:`armlab.plots.kinds` for the kinds and the summary keys each reads);
``save_figures(summary, target)`` writes them as PNG, SVG or PDF files.  ``armlab plot`` and
``armlab run --plot`` are thin wrappers around these two functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from armlab.errors import ArmlabError
from armlab.plots.kinds import FIGURE_KINDS, FigureKind, applicable_kinds
from armlab.plots.render import draw

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURE_KINDS", "FigureKind", "load_summary", "plot_summary", "save_figures"]

#: File formats ``save_figures`` writes (from the target's suffix).
FORMATS = (".png", ".svg", ".pdf")


def load_summary(path: str | Path) -> dict[str, Any]:
    """Read a ``summary.json`` file, or the one inside a results directory."""
    path = Path(path)
    file = path / "summary.json" if path.is_dir() else path
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ArmlabError(f"cannot read summary {str(file)!r}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ArmlabError(f"{file}: not a JSON summary: {exc}") from None


def plot_summary(
    summary: Mapping[str, Any],
    kinds: Sequence[str] | None = None,
    *,
    logx: bool = False,
    logy: bool = False,
) -> dict[str, Figure]:
    """One figure per kind that ``summary`` supports (or per kind named in ``kinds``).

    Raises :class:`~armlab.errors.ArmlabError` when nothing can be drawn (a live run, or
    kinds whose keys the summary lacks).
    """
    try:
        chosen = applicable_kinds(summary, kinds)
    except ValueError as exc:
        raise ArmlabError(str(exc)) from None
    if not chosen:
        wanted = kinds or [k.name for k in FIGURE_KINDS]
        raise ArmlabError(
            f"nothing to plot: the summary has no data for {', '.join(wanted)} "
            f"(live runs have no curves; see armlab.plots.kinds for the keys each figure reads)"
        )
    try:
        return {kind.name: draw(kind, summary, logx=logx, logy=logy) for kind in chosen}
    except ValueError as exc:
        raise ArmlabError(f"malformed summary: {exc}") from None


def save_figures(
    summary: Mapping[str, Any],
    target: str | Path,
    kinds: Sequence[str] | None = None,
    *,
    logx: bool = False,
    logy: bool = False,
) -> list[Path]:
    """Write the figures of :func:`plot_summary`; return the paths written.

    ``target`` is a directory (files ``<kind>.png`` inside) or a file name ending in
    .png, .svg or .pdf: used as is for a single figure, and as ``<stem>-<kind><suffix>``
    when there are several.
    """
    target = Path(target)
    figures = plot_summary(summary, kinds, logx=logx, logy=logy)
    if target.suffix.lower() in FORMATS:
        paths = {name: target for name in figures} if len(figures) == 1 else {
            name: target.with_name(f"{target.stem}-{name}{target.suffix}") for name in figures
        }
    elif target.suffix:
        raise ArmlabError(f"cannot write {target.name!r}: use a directory or a {', '.join(FORMATS)} file")
    else:
        paths = {name: target / f"{name}.png" for name in figures}
    for name, fig in figures.items():
        paths[name].parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(paths[name], dpi=150)
    return list(paths.values())
