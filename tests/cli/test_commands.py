"""The command line: run, plugins, validate, logs."""

from __future__ import annotations

import pytest

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

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


@pytest.mark.slow
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


HELLO_PLUGIN = """\
import click
from armlab import hookimpl

@hookimpl
def armlab_register_commands(cli):
    @cli.command("hello")
    def hello():
        click.echo("hello from a plugin")
"""


def armlab_process(*args: str, pythonpath: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``armlab ARGS`` in a fresh interpreter that sees the distributions in ``pythonpath``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ARMLAB_")}
    return subprocess.run(
        [sys.executable, "-c", "from armlab.cli import main; main()", *args],
        capture_output=True, text=True, env={**clean, "PYTHONPATH": str(pythonpath), **env}, timeout=120,
    )


@pytest.mark.system
def test_no_plugins_keeps_a_broken_entry_point_out_of_every_command(fake_dist):
    path = fake_dist("broken-pkg", "0.1", {"broken": "broken_pkg.plugin"})
    quickstart = str(REPO / "examples/quickstart.toml")
    failed = armlab_process("validate", quickstart, pythonpath=path)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "plugin entry point 'broken = broken_pkg.plugin' of distribution 'broken-pkg 0.1'" in failed.stderr
    for args, env in [
        (["--no-plugins", "validate", quickstart], {}),
        (["validate", quickstart], {"ARMLAB_DISABLE_PLUGIN_AUTOLOAD": "1"}),
        (["--no-plugins", "--help"], {}),
    ]:
        done = armlab_process(*args, pythonpath=path, **env)
        assert done.returncode == 0, (args, done.stderr)


@pytest.mark.system
def test_plugin_commands_join_unless_plugins_are_off(fake_dist):
    path = fake_dist("hello-pkg", "1.0", {"hello": "armlab_hello"}, {"armlab_hello": HELLO_PLUGIN})
    assert armlab_process("hello", pythonpath=path).stdout == "hello from a plugin\n"
    off = armlab_process("--no-plugins", "hello", pythonpath=path)
    assert off.returncode == 2 and "No such command 'hello'" in off.stderr
    assert armlab_process("--no-plugins", "plot", "--help", pythonpath=path).returncode == 0  # a built-in's
