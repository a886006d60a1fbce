"""The command line: run, plugins, validate, logs, and the README's commands."""

from __future__ import annotations

import json
import re
import shlex

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


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- setup-commands -->\s*```(?:bash|sh)?\n(.*?)```", text, re.S)
    assert block, "README.md must keep its set-up commands block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_readme_states_two_setup_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2
    assert "armlab run examples/" in commands[0] and "pytest" in commands[1]
    ci = (REPO / ".ci/run").read_text()
    assert commands[1] in ci


def test_readme_main_command_runs_at_reduced_scale(tmp_path):
    run_part = readme_commands()[0].split("&&")[-1].strip()
    argv = shlex.split(run_part)
    assert argv[0].endswith("armlab") and argv[1] == "run"
    config = REPO / argv[2]
    result = invoke("run", str(config), "--replicas", "20", "--out", str(tmp_path / "out"))
    assert "error at budget" in result.output


def test_readme_policy_example_meets_the_contract():
    from armlab.testing import check_policy

    text = (REPO / "README.md").read_text()
    code = re.search(r"## Write a policy in 30 lines.*?```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    check_policy(namespace["EpsilonGreedy"])
    assert namespace["armlab_register_policies"]() == [namespace["EpsilonGreedy"]]
