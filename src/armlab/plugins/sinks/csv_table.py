"""``results.csv``: the summary as a tidy table (one row per policy x checkpoint x sweep value).

Opens directly in pandas (``pd.read_csv("results.csv")``) or a spreadsheet.  Columns:

* ``experiment``, ``objective``, ``seed``, ``replicas``, ``budget``;
* ``sweep_parameter`` and ``sweep_value`` for a ``[sweep]`` run (one block of rows per run);
* ``policy`` (the label), ``plugin``, ``checkpoint`` (trials at the checkpoint);
* every per-checkpoint metric of the policy entry (``error_rate``, ``error_stderr``,
  ``regret_mean``, ``confidence_mean``...: lists as long as ``checkpoints``);
* every scalar entry (``stopping_time_mean``, ``wall_seconds``...), repeated on each row;
* ``param.<name>`` for each plugin parameter.

A live run (one replica of real trials) has one row per checkpoint x arm (x bandit) instead,
with what the run had at that checkpoint:

* ``experiment``, ``objective``, ``seed``, ``replicas`` (1), ``budget``, ``policy``, ``plugin``,
  ``checkpoint`` (trials dispatched at the checkpoint);
* ``bandit`` and ``bandit_label`` with several bandits (``[[bandits]]``);
* ``arm`` (index), ``arm_name``, ``pulls`` (trials sent to the arm, failed ones included),
  ``observed`` (rewards received), ``mean`` (their mean; empty before the first) and
  ``recommended`` (the arm is, or is in, its bandit's answer; empty for regret);
* ``completed``, ``failed``, ``abandoned``, ``late``: the run's trial outcomes so far.

Missing values (a standard error of one replica, a metric one policy lacks) are empty cells;
non-scalar values (a swept list of means, a list-valued parameter) are written as JSON.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from armlab.plugins.interfaces import ResultSink

__all__ = ["CsvTable", "table_columns", "tidy_rows"]

#: Per-arm lists of live-run summaries: not per-checkpoint series, even when equally long.
_PER_ARM_KEYS = frozenset({"counts", "means"})
_FIXED = ("experiment", "objective", "seed", "replicas", "budget", "sweep_parameter", "sweep_value",
          "policy", "plugin", "checkpoint", "bandit", "bandit_label", "arm", "arm_name")
#: The trial outcomes a live run counts at each checkpoint.
_OUTCOMES = ("completed", "failed", "abandoned", "late")


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def _policy_rows(run: Mapping[str, Any], label: str, entry: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    checkpoints = list(run.get("checkpoints") or [])
    series = {
        key: value for key, value in entry.items()
        if isinstance(value, list) and key not in _PER_ARM_KEYS and len(value) == len(checkpoints)
        and all(_is_number(v) for v in value)
    }
    scalars = {key: value for key, value in entry.items() if key not in series and key not in ("plugin", "params")
               and not isinstance(value, (list, dict))}
    params = {f"param.{name}": value for name, value in (entry.get("params") or {}).items()}
    for index, trials in enumerate(checkpoints):
        row = {"policy": label, "plugin": entry.get("plugin"), "checkpoint": trials}
        row.update({key: values[index] for key, values in series.items()})
        row.update(scalars)
        row.update(params)
        yield row


def _live_rows(label: str, entry: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A live run's rows: one per checkpoint x bandit x arm, from ``entry["at_checkpoints"]``."""
    names = entry.get("arm_names") or []
    labels = entry.get("bandit_labels")
    for state in entry["at_checkpoints"]:
        outcomes = {key: state[key] for key in _OUTCOMES}
        for b, bandit in enumerate(state["bandits"]):
            place = {} if labels is None else {"bandit": b, "bandit_label": labels[b]}
            answer = bandit["recommendation"]
            for arm, pulls in enumerate(bandit["pulls"]):
                yield {
                    "policy": label, "plugin": entry.get("plugin"), "checkpoint": state["trials"], **place,
                    "arm": arm, "arm_name": names[b][arm] if b < len(names) else str(arm),
                    "pulls": pulls, "observed": bandit["observed"][arm], "mean": bandit["means"][arm],
                    "recommended": None if answer is None else arm in (answer if isinstance(answer, list) else [answer]),
                    **outcomes,
                }


def tidy_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``results.csv`` as dictionaries (values not yet formatted)."""
    sweep = summary.get("sweep")
    rows = []
    for run in summary.get("runs") or [summary]:
        head = {
            "experiment": summary.get("name"),
            "objective": summary.get("objective"),
            "seed": summary.get("seed"),
            "replicas": run.get("replicas"),
            "budget": run.get("budget"),
        }
        if sweep:
            head |= {"sweep_parameter": sweep["parameter"], "sweep_value": run.get("sweep_value")}
        for label, entry in run["policies"].items():
            policy_rows = _live_rows(label, entry) if "at_checkpoints" in entry else _policy_rows(run, label, entry)
            rows.extend(head | row for row in policy_rows)
    return rows


def table_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The columns of ``rows`` in ``results.csv`` order: the fixed ones present, then the rest
    as they first appear (also the column order of ``ExperimentResult.to_pandas()``)."""
    columns = [c for c in _FIXED if any(c in row for row in rows)]
    return columns + list(dict.fromkeys(key for row in rows for key in row if key not in _FIXED))


class CsvTable(ResultSink):
    """Write a tidy ``results.csv``: one row per policy x checkpoint (x sweep value); a live
    run's per checkpoint x arm (x bandit)."""

    name = "csv"

    def write(self, summary: Mapping[str, Any], out_dir: Path) -> Path:
        rows = tidy_rows(summary)
        columns = table_columns(rows)
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "results.csv"
        tmp = path.with_suffix(".csv.tmp")
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, restval="")
            writer.writeheader()
            writer.writerows({key: _cell(value) for key, value in row.items()} for row in rows)
        tmp.replace(path)
        return path
