"""The tidy ``results.csv`` sink: one row per policy x checkpoint (x sweep value)."""

from __future__ import annotations

import csv
import math

import pytest

from armlab import run_experiment
from armlab.plugins.sinks.csv_table import CsvTable, tidy_rows


def _read(path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_real_run_writes_one_row_per_policy_and_checkpoint(tmp_path, make_config, registry):
    config = make_config(replicas=6, checkpoints=[50, 100, 200],
                         policies=[{"plugin": "uniform"}, {"plugin": "ucb1", "exploration": 1.0}])
    summary = run_experiment(config, out_dir=tmp_path, registry=registry)
    assert "csv" in registry.names("sink")
    rows = _read(tmp_path / "results.csv")
    assert [(r["policy"], r["checkpoint"]) for r in rows] == [
        (p, c) for p in ("uniform", "ucb1") for c in ("50", "100", "200")
    ]
    for row in rows:
        entry = summary["policies"][row["policy"]]
        index = summary["checkpoints"].index(int(row["checkpoint"]))
        assert float(row["error_rate"]) == entry["error_rate"][index]  # full precision
        assert float(row["error_stderr"]) == entry["error_stderr"][index]
        assert row["experiment"] == "t" and row["objective"] == "best-arm" and row["replicas"] == "6"
    assert rows[3]["param.exploration"] == "1.0" and rows[0]["param.exploration"] == ""
    assert "sweep_value" not in rows[0]


def test_sweep_rows_carry_the_swept_value_and_scalars_repeat(single_run, sweep_summary, tmp_path):
    runs = [
        single_run(checkpoints=(5, 10), lucb={"error_rate": [0.5, 0.25], "error_stderr": [None, None],
                                              "stopping_time_mean": 7.5, "params": {"delta": 0.1}}),
        single_run(checkpoints=(10, 20), lucb={"error_rate": [0.4, 0.2], "error_stderr": [0.1, 0.1],
                                               "stopping_time_mean": 12.0, "params": {"delta": 0.1}}),
    ]
    summary = sweep_summary("source.means", [[0.5, 0.4], [0.6, 0.4]], runs)
    rows = _read(CsvTable().write(summary, tmp_path))
    assert [(r["sweep_value"], r["checkpoint"], r["error_rate"]) for r in rows] == [
        ("[0.5, 0.4]", "5", "0.5"), ("[0.5, 0.4]", "10", "0.25"),
        ("[0.6, 0.4]", "10", "0.4"), ("[0.6, 0.4]", "20", "0.2"),
    ]
    assert {r["sweep_parameter"] for r in rows} == {"source.means"}
    assert [r["stopping_time_mean"] for r in rows] == ["7.5", "7.5", "12.0", "12.0"]
    assert rows[0]["error_stderr"] == "" and rows[2]["error_stderr"] == "0.1"
    assert rows[0]["param.delta"] == "0.1"
    assert list(rows[0])[:10] == ["experiment", "objective", "seed", "replicas", "budget", "sweep_parameter",
                                  "sweep_value", "policy", "plugin", "checkpoint"]


def test_live_run_rows_keep_per_arm_lists_out(single_run):
    live = single_run(checkpoints=(1, 2, 3), a={"trials": 3, "failed": 0, "counts": [1, 1, 1],
                                                 "means": [0.1, 0.2, 0.3], "recommendations": [0, 1, 2],
                                                 "recommendation": 2})
    rows = tidy_rows(live)
    assert [r["recommendations"] for r in rows] == [0, 1, 2]
    assert all("counts" not in r and "means" not in r for r in rows)
    assert {r["recommendation"] for r in rows} == {2}


def test_nan_and_infinite_values_survive_as_text(single_run, tmp_path):
    summary = single_run(a={"error_rate": [math.nan, 0.5, 0.25], "error_stderr": [0.1] * 3, "bound": math.inf})
    rows = _read(CsvTable().write(summary, tmp_path))
    assert rows[0]["error_rate"] == "nan" and rows[0]["bound"] == "inf"
    assert float(rows[2]["error_rate"]) == pytest.approx(0.25)
