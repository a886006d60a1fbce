"""``armlab run --out DIR`` on a folder that already holds results: refused unless they are
this run's own, so a finished run is never replaced without a word.

The results are compared by what made them: ``summary.json``'s ``provenance.config``, the
whole resolved config (seed and replicas included).  A folder whose results came from
another config, seed or scale is refused, naming what differs, unless ``--overwrite``.  The
same settings again are allowed: a simulated run gives the same numbers (and an interrupted
one continues from its saved tasks), and a live run with ``--journal`` resumes the journal
that made them.  A live run without a journal would replace its results with another run's
trials, so it is refused too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from armlab.cli.errors import UserError
from armlab.config import ExperimentConfig

__all__ = ["check_earlier_results", "config_differences"]

#: How many differing fields the refusal names (then "and N more").
SHOWN = 4


def check_earlier_results(out_dir: str | Path, config: ExperimentConfig, *, live: bool, journaled: bool,
                          overwrite: bool) -> None:
    """Refuse ``out_dir`` when its ``summary.json`` came from another experiment than
    ``config`` (or from an unjournaled ``live`` run), unless ``overwrite``; with ``overwrite``
    the saved tasks of another experiment (``DIR/tasks``) are removed too."""
    folder = Path(out_dir)
    summary = folder / "summary.json"
    if overwrite:
        shutil.rmtree(folder / "tasks", ignore_errors=True)  # another experiment's, or stale
        return
    if not summary.is_file():
        return
    earlier = _earlier_config(summary)
    ours = config.model_dump(mode="json")
    if earlier is None:
        reason = "results that do not say which config made them"
    elif earlier != ours:
        reason = "the results of another run (" + ", ".join(config_differences(earlier, ours)) + ")"
    elif live and not journaled:
        reason = "the results of this live experiment: another run gets other trials"
    else:
        return
    raise UserError(f"--out {folder} holds {reason}; give --overwrite to replace them, or choose another --out")


def _earlier_config(summary: Path) -> dict[str, Any] | None:
    """The resolved config recorded in ``summary``'s provenance, or ``None``."""
    try:
        recorded = json.loads(summary.read_text(encoding="utf-8"))["provenance"]["config"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return recorded if isinstance(recorded, dict) else None


def config_differences(earlier: Any, ours: Any, path: str = "") -> list[str]:
    """``field: earlier -> ours`` for each differing field (dotted path; list items by index),
    the first :data:`SHOWN` of them and how many more."""
    found = _differences(earlier, ours, path)
    shown = [f"{field}: {old} -> {new}" for field, old, new in found[:SHOWN]]
    return shown + ([f"and {len(found) - SHOWN} more"] if len(found) > SHOWN else [])


def _differences(earlier: Any, ours: Any, path: str) -> list[tuple[str, str, str]]:
    if isinstance(earlier, dict) and isinstance(ours, dict):
        return [found for key in sorted(earlier.keys() | ours.keys(), key=str)
                for found in _differences(earlier.get(key), ours.get(key), f"{path}.{key}" if path else str(key))]
    if isinstance(earlier, list) and isinstance(ours, list) and len(earlier) == len(ours):
        return [found for index, (a, b) in enumerate(zip(earlier, ours, strict=True))
                for found in _differences(a, b, f"{path}[{index}]")]
    if earlier == ours:
        return []
    return [(path, json.dumps(earlier), json.dumps(ours))]
