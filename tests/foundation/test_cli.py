"""The command line: run, plugins, validate, logs."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from pathlib import Path

from armlab.cli import cli

REPO = Path(__file__).resolve().parents[2]


def invoke(*args):
    result = CliRunner().invoke(cli, ["--no-plugins", *args])
    assert result.exit_code == 0, result.output
    return result


def test_run_writes_the_documented_summary(tmp_path):
    out, log = tmp_path / "out", tmp_path / "events.jsonl"
    result = invoke("run", str(REPO / "examples/quickstart.toml"), "--replicas", "30", "--seed", "4",
                    "--out", str(out), "--log", str(log))
    assert re.search(r"^sh\s+\d", result.output, re.M) and "results:" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert {"name", "seed", "replicas", "budget", "objective", "checkpoints", "policies"} <= summary.keys()
    assert summary["seed"] == 4 and summary["replicas"] == 30
    for entry in summary["policies"].values():
        assert {"plugin", "params", "error_rate", "error_stderr", "wall_seconds", "run_steps_per_second"} <= entry.keys()
        assert len(entry["error_rate"]) == len(summary["checkpoints"])
    events = [json.loads(line) for line in log.read_text().splitlines()]
    names = {e["event"] for e in events}
    assert {"experiment_started", "checkpoint", "experiment_finished"} <= names
    assert all(e["experiment"] == "quickstart" for e in events)


def test_same_seed_same_summary(tmp_path):
    runs = []
    for name in ("a", "b"):
        invoke("run", str(REPO / "examples/quickstart.toml"), "--replicas", "20", "--out", str(tmp_path / name))
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        runs.append({k: v["error_rate"] for k, v in summary["policies"].items()})
    assert runs[0] == runs[1]


def test_plugins_lists_kinds_params_and_origin():
    listing = json.loads(invoke("plugins", "--json").output)
    ucb1 = next(p for p in listing if p["name"] == "ucb1")
    assert ucb1["kind"] == "policy" and ucb1["origin"] == "armlab (built-in)"
    assert ucb1["params"]["exploration"]["default"] == 2.0
    assert {p["kind"] for p in listing} >= {"policy", "source", "allocator", "sink"}
    sources = invoke("plugins", "--kind", "source").output
    assert "gaussian" in sources and "ucb1" not in sources
