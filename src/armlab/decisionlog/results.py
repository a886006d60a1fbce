"""An offline evaluation as data: the JSON document ``armlab evaluate --out`` writes and
``armlab report`` renders.

The document names the log (location, experiment, bandit, its completed trials, the policy
that logged it, the declared reward range) and holds one row per policy and estimator:
``estimate``, ``stderr``, ``interval`` (95 %, clipped to the reward range),
``effective_sample_size``, ``trials``, and ``reason`` where the estimator does not apply
(``estimate`` is then ``null``).  This module needs nothing but the standard library, so the
report reads a document without loading the evaluation machinery.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from armlab.errors import ArmlabError

__all__ = ["FILE_NAME", "KIND", "read_evaluation", "write_evaluation"]

#: The ``kind`` field that marks a document as an offline evaluation.
KIND = "armlab offline evaluation"
#: The file written into a directory given as ``--out``.
FILE_NAME = "evaluation.json"
#: Fields every document holds (``read_evaluation`` refuses one without them).
_FIELDS = ("log", "trials", "results")


def _target(out: str | Path) -> Path:
    """``out`` itself when it names a ``.json`` file, else ``out/evaluation.json``."""
    out = Path(out)
    return out if out.suffix.lower() == ".json" else out / FILE_NAME


def write_evaluation(document: Mapping[str, Any], out: str | Path) -> Path:
    """Write ``document`` to ``out`` (a ``.json`` file, or a directory, created if needed);
    return the file written."""
    path = _target(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ArmlabError(f"--out {str(out)!r}: cannot write the evaluation ({exc.strerror or exc}); "
                          "give a writable directory or a FILE.json") from None
    return path


def read_evaluation(source: str | Path) -> dict[str, Any] | None:
    """The evaluation document at ``source`` (a file, or a directory holding
    ``evaluation.json`` and no ``summary.json``); ``None`` when ``source`` is something else
    (a run's summary, for one)."""
    path = Path(source)
    if path.is_dir():
        if (path / "summary.json").is_file() or not (path / FILE_NAME).is_file():
            return None
        path = path / FILE_NAME
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # not ours to judge: the summary reader says what is wrong
    if not isinstance(document, dict) or document.get("kind") != KIND:
        return None
    missing = [f for f in _FIELDS if f not in document]
    if missing or not isinstance(document["results"], list):
        raise ArmlabError(f"{path}: an offline evaluation without {', '.join(missing) or 'a results list'}; "
                          "write it again with `armlab evaluate LOG --policy NAME --out FILE.json`")
    return document
