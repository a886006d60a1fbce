"""``armlab export`` and :func:`read_log`: a decision log as a pandas DataFrame, written to
Parquet or CSV, read back with the same column types.

pandas and pyarrow come with armlab's ``log`` extra; without it these functions raise
:class:`~armlab.extras.MissingExtra` naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from armlab.decisionlog.source import read_run
from armlab.decisionlog.table import COLUMNS, TrialTable, trial_table
from armlab.errors import ArmlabError
from armlab.extras import require
from armlab.plugins.registry import Registry

__all__ = ["FORMATS", "read_log", "to_frame", "write_log"]

#: File suffixes ``armlab export`` writes.
FORMATS = (".parquet", ".csv")

#: pandas dtypes of the columns (nullable where a value may be missing).
_DTYPES = {
    "trial": "int64", "unit": "string", "bandit": "int64", "arm": "int64", "arm_name": "string",
    "dispatched_at": "float64", "observed_at": "float64", "status": "string", "reward": "float64",
    "late_reward": "float64", "metrics": "string", "propensity": "float64", "propensity_estimated": "bool",
    "propensity_draws": "Int64", "policy": "string", "checkpoint": "Int64",
}


def _pandas(feature: str) -> Any:
    return require("pandas", "log", feature)


def to_frame(table: TrialTable) -> Any:
    """``table`` as a DataFrame with the types of :data:`_DTYPES` (missing values as ``<NA>``)."""
    pd = _pandas("a decision log as a DataFrame")
    columns = dict(table.columns)
    for name in ("propensity_draws", "checkpoint"):  # -1 marks a missing count
        columns[name] = pd.array([None if v < 0 else int(v) for v in columns[name].tolist()], dtype="Int64")
    return pd.DataFrame({name: pd.Series(columns[name]).astype(_DTYPES[name]) for name in COLUMNS})


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ArmlabError(f"--out {str(path)!r}: give a file ending in .parquet or .csv (the format follows the suffix)")
    return suffix


def write_log(location: str | Path, out: str | Path, *, experiment: str | None = None,
              registry: Registry | None = None) -> int:
    """Export the log at ``location`` (journal file, or storage URL with ``experiment``) to
    ``out`` (``.parquet`` or ``.csv``); return the number of trials written."""
    out = Path(out)
    suffix = _format(out)
    if suffix == ".parquet":
        require("pyarrow", "log", "armlab export to Parquet")
    frame = to_frame(trial_table(read_run(location, experiment), registry))
    if suffix == ".parquet":
        frame.to_parquet(out, index=False)
    else:
        frame.to_csv(out, index=False)
    return len(frame)


def read_log(location: str | Path, experiment: str | None = None, registry: Registry | None = None) -> Any:
    """A decision log as a pandas DataFrame, one row per trial: from a file written by
    ``armlab export`` (``.parquet`` or ``.csv``), from a journal, or from a storage URL with
    ``experiment``."""
    pd = _pandas("armlab.read_log")
    path = Path(str(location))
    suffix = path.suffix.lower() if "://" not in str(location) else ""
    if suffix == ".parquet":
        require("pyarrow", "log", "reading a Parquet decision log")
        return pd.read_parquet(path).astype(_DTYPES)
    if suffix == ".csv":
        frame = pd.read_csv(path, dtype={k: v for k, v in _DTYPES.items() if v != "bool"}, keep_default_na=False,
                            na_values={k: [""] for k in _DTYPES})
        return frame.astype(_DTYPES)
    return to_frame(trial_table(read_run(location, experiment), registry))
