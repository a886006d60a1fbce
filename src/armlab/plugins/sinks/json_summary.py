"""``summary.json``: the machine-readable result of an experiment."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from armlab.plugins.interfaces import ResultSink


class JsonSummary(ResultSink):
    """Write the summary as ``summary.json`` (indented, written atomically)."""

    name = "json"

    def write(self, summary: Mapping[str, Any], out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "summary.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(summary, indent=2, allow_nan=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path
