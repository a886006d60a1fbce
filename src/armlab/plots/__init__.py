"""The figures the seed papers show, drawn from a ``summary.json``.

``plot_summary(summary)`` returns one matplotlib figure per applicable figure kind (see
:mod:`armlab.plots.kinds` for the kinds and the summary keys each reads);
``save_figures(summary, target)`` writes them as PNG files into a directory, or all of them
into the one PNG, SVG or PDF file ``target`` names.  ``armlab plot`` and
``armlab run --plot`` are thin wrappers around these two functions.  Figures written into a
directory are named ``<kind>.<format>``, so :func:`remove_figures` can clear those of an
earlier run from a results directory that is used again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from armlab.errors import ArmlabError
from armlab.plots.kinds import FIGURE_KINDS, FigureKind, applicable_kinds
from armlab.plots.render import draw, draw_stacked

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FIGURE_KINDS", "FigureKind", "load_summary", "plot_summary", "remove_figures", "save_figures"]

#: File formats ``save_figures`` writes (from the target's suffix).
FORMATS = (".png", ".svg", ".pdf")
#: Image formats it does not write: a target with one of these suffixes is a mistake, not a
#: directory name (any other suffix is part of a directory's name, such as ``run.v2``).
OTHER_IMAGE_FORMATS = (".jpg", ".jpeg", ".tif", ".tiff", ".eps", ".ps", ".webp", ".gif", ".bmp", ".svgz", ".pgf")


def load_summary(path: str | Path) -> dict[str, Any]:
    """Read a ``summary.json`` file, or the one inside a results directory."""
    path = Path(path)
    file = path / "summary.json" if path.is_dir() else path
    try:
        summary = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ArmlabError(f"cannot read summary {str(file)!r}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArmlabError(f"{file}: not a JSON summary: {exc}") from None
    try:
        _check_shape(summary)
    except ArmlabError as exc:
        raise ArmlabError(f"{file}: {exc}") from None
    return summary


def _check_shape(summary: Any) -> None:
    """Refuse JSON that is not a summary written by ``armlab run``: an object with a
    ``policies`` object (in every run of a sweep too)."""
    hint = "give the summary.json that `armlab run --out DIR` writes"
    if not isinstance(summary, Mapping) or not isinstance(summary.get("policies"), Mapping):
        raise ArmlabError(f"not an armlab summary (no \"policies\" object); {hint}")
    runs = summary.get("runs")
    if runs is not None and not (
        isinstance(runs, list) and all(isinstance(r, Mapping) and isinstance(r.get("policies"), Mapping) for r in runs)
    ):
        raise ArmlabError(f"not an armlab summary (\"runs\" is not a list of runs with \"policies\"); {hint}")


def plot_summary(
    summary: Mapping[str, Any],
    kinds: Sequence[str] | None = None,
    *,
    logx: bool = False,
    logy: bool = False,
) -> dict[str, Figure]:
    """One figure per kind that ``summary`` supports (or per kind named in ``kinds``).

    Raises :class:`~armlab.errors.ArmlabError` when nothing can be drawn (a live run, or
    kinds whose keys the summary lacks) or the summary is malformed.
    """
    chosen = _chosen_kinds(summary, kinds)
    with _malformed():
        return {kind.name: draw(kind, summary, logx=logx, logy=logy) for kind in chosen}


def _chosen_kinds(summary: Mapping[str, Any], kinds: Sequence[str] | None) -> list[FigureKind]:
    """The kinds to draw: those ``summary`` has data for (of ``kinds``, when given); refused
    when there is none."""
    _check_shape(summary)
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
    return chosen


@contextmanager
def _malformed() -> Iterator[None]:
    """A summary whose entries do not fit the figure kinds: an :class:`ArmlabError` saying so."""
    try:
        yield
    except ValueError as exc:
        raise ArmlabError(f"malformed summary: {exc}") from None
    except KeyError as exc:
        raise ArmlabError(f"malformed summary: no {exc.args[0]!r} entry where figure kinds read one") from None


def save_figures(
    summary: Mapping[str, Any],
    target: str | Path,
    kinds: Sequence[str] | None = None,
    *,
    logx: bool = False,
    logy: bool = False,
) -> list[Path]:
    """Write the figures of :func:`plot_summary`; return the paths written.

    ``target`` is a directory (files ``<kind>.png`` inside; its name may hold a dot, as in
    ``results/run.v2``) or a file name ending in .png, .svg or .pdf, which is the one file
    written: several figures go into it one above the other (:func:`draw_stacked`).
    """
    target = Path(target)
    if figure_file(target):
        chosen = _chosen_kinds(summary, kinds)
        with _malformed():
            figures = {target.stem: draw(chosen[0], summary, logx=logx, logy=logy) if len(chosen) == 1
                       else draw_stacked(chosen, summary, logx=logx, logy=logy)}
        paths = {target.stem: target}
    else:
        figures = plot_summary(summary, kinds, logx=logx, logy=logy)
        paths = {name: target / f"{name}.png" for name in figures}
    for name, fig in figures.items():
        try:
            paths[name].parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(paths[name], dpi=150)
        except OSError as exc:
            raise ArmlabError(f"cannot write figure {str(paths[name])!r}: {exc.strerror or exc}") from None
    return list(paths.values())


def figure_file(target: str | Path) -> bool:
    """Whether ``target`` names one figure file (a .png, .svg or .pdf that is not an existing
    directory) rather than a directory; an image format armlab does not write is refused."""
    target = Path(target)
    if target.is_dir():
        return False
    suffix = target.suffix.lower()
    if suffix in OTHER_IMAGE_FORMATS:
        raise ArmlabError(f"cannot write {target.name!r}: use a directory or a {', '.join(FORMATS)} file")
    return suffix in FORMATS


def remove_figures(directory: str | Path) -> list[Path]:
    """Delete the figures :func:`save_figures` writes into ``directory`` (``<kind>.png``,
    ``.svg`` or ``.pdf``, for every kind); return the files deleted.

    A results directory used again would otherwise keep figures of an earlier run next to
    the new summary, for kinds the new run does not draw.
    """
    removed = []
    for kind in FIGURE_KINDS:
        for suffix in FORMATS:
            path = Path(directory) / f"{kind.name}{suffix}"
            if path.is_file():
                path.unlink()
                removed.append(path)
    return removed
