"""``armlab run``: --plot, the progress display on a terminal, quiet JSON logs otherwise."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from armlab.cli import cli
from armlab.cli.run import format_table
from armlab.cli.run import ProgressDisplay
from armlab.config import load_config

CONFIG = """\
name = "cli-demo"
seed = 4
replicas = 10
checkpoint_every = 100
[problem]
objective = "regret"
budget = 400
[source]
plugin = "bernoulli"
means = [0.6, 0.5, 0.4]
[[policies]]
plugin = "ucb1"
[[policies]]
plugin = "uniform"
"""


@pytest.fixture
def config_file(tmp_path) -> Path:
    path = tmp_path / "demo.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def test_plot_flag_writes_figures_next_to_the_results(tmp_path, config_file):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(config_file), "--out", str(out), "--plot"])
    assert result.exit_code == 0, result.output
    assert f"figures: {out / 'regret-vs-time.png'}" in result.stdout
    assert {p.name for p in out.iterdir()} == {"summary.json", "results.csv", "regret-vs-time.png"}
    assert (out / "regret-vs-time.png").stat().st_size > 10_000


def test_plot_flag_needs_an_output_directory(config_file):
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(config_file), "--plot"])
    assert result.exit_code == 2 and "--plot needs --out DIR" in result.output


def test_without_a_terminal_stderr_has_json_logs_and_no_progress_bar(config_file):
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(config_file)])
    assert result.exit_code == 0, result.output
    events = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert events[:2] == ["time_estimated", "experiment_started"] and events[-1] == "experiment_finished"
    assert "cli-demo: regret, budget 400" in result.stdout


def _display(config_text: str, tmp_path: Path) -> tuple[ProgressDisplay, io.StringIO]:
    path = tmp_path / "c.toml"
    path.write_text(config_text, encoding="utf-8")
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=120)
    return ProgressDisplay.for_config(load_config(path), console), stream


def test_progress_bars_span_every_run_of_a_sweep(tmp_path):
    sweep = CONFIG + '[sweep]\nparameter = "problem.budget"\nvalues = [100, 300]\n'
    display, stream = _display(sweep, tmp_path)
    with display:
        assert display.progress.tasks == []  # no bar before the first report (live runs send none)
        display("ucb1", 640, 4000)  # trials over all runs of the sweep
        display("ucb1", 1000, 4000)  # first run (10 replicas x 100) finished
        display("ucb1", 1640, 4000)
        display("uniform", 1000, 4000)
        tasks = {t.description: t for t in display.progress.tasks}
        assert tasks["ucb1"].total == 10 * (100 + 300) and tasks["ucb1"].completed == 1000 + 640
        assert tasks["uniform"].completed == 1000
        display.progress.refresh()
    assert all(t.completed == t.total for t in display.progress.tasks)  # a clean exit completes them
    text = stream.getvalue()
    assert "ucb1" in text and "ETA" in text and "1640/4000" in text


@pytest.mark.system
def test_a_terminal_gets_the_progress_display(config_file):
    pty = pytest.importorskip("pty")
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "ARMLAB_DISABLE_PLUGIN_AUTOLOAD": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from armlab.cli import main; main()", "run", str(config_file), "--replicas", "40"],
        stdout=subprocess.PIPE, stderr=secondary, env=env,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:  # the terminal closed: the process is done
            break
        if not data:
            break
        chunks.append(data)
    stdout, _ = process.communicate(timeout=60)
    os.close(primary)
    terminal = b"".join(chunks).decode("utf-8", errors="replace")
    assert process.returncode == 0, terminal
    assert "ETA" in terminal and "16000/16000" in terminal  # 40 replicas x 400 trials
    assert '"event"' not in terminal  # no JSON logs on a terminal
    assert b"cli-demo: regret" in stdout


def test_the_table_shows_the_metric_each_objective_is_judged_by(tmp_path):
    """Fixed-confidence rules: stopping times; sweeps: every value; live runs: their own header."""
    confident = {"name": "fc", "objective": "best-arm", "budget": 900, "replicas": 10, "seed": 1, "policies": {
        "lucb1": {"error_rate": [0.1, 0.0], "error_stderr": [0.1, 0.0], "stopping_time_mean": 412.5,
                  "stopping_time_stderr": 20.25, "error_rate_at_stop": 0.0, "wall_seconds": 1.0,
                  "run_steps_per_second": 10.0}}}
    table = format_table(confident)
    assert "stopping time" in table and "412.5 ± 20.25" in table
    swept = {"name": "sw", "objective": "regret", "budget": [100, 200], "replicas": 10, "seed": 1,
             "sweep": {"parameter": "problem.budget", "values": [100, 200]}, "policies": {
                 "ucb1": {"regret_mean": [3.5, 5.25], "regret_stderr": [0.5, 0.75]}}}
    table = format_table(swept)
    assert "by problem.budget" in table and "3.5 ± 0.5" in table and "5.25 ± 0.75" in table
    live = {"name": "lv", "objective": "best-arm", "budget": 12, "replicas": 1, "seed": 1, "policies": {
        "ucb1": {"trials": 12, "completed": 11, "failed": 1, "recommendation": 1}}}
    table = format_table(live, [["A", "B"]])
    assert "error at budget" not in table and "completed" in table and "B (arm 1)" in table


def _armlab_workers() -> list:
    import multiprocessing

    return [p for p in multiprocessing.active_children() if p.name.startswith("armlab-worker-")]


@pytest.mark.system
def test_run_starts_its_workers_before_it_reads_the_config_and_stops_them_on_a_refusal(monkeypatch, config_file,
                                                                                       tmp_path):
    """``armlab run --workers 2``: the worker imports armlab while the config is read, checked
    and probed; the run takes it, and a refused config stops it (no process left behind)."""
    from armlab.cli import run as run_command

    alive_while_loading = []
    load = run_command.load_experiment

    def loading(*args):
        alive_while_loading.append(len(_armlab_workers()))
        return load(*args)

    monkeypatch.setattr(run_command, "load_experiment", loading)
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(config_file), "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert alive_while_loading == [1] and _armlab_workers() == []
    bad = tmp_path / "bad.toml"
    bad.write_text(CONFIG.replace("budget = 400", "budget = -1"), encoding="utf-8")
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(bad), "--workers", "2"])
    assert result.exit_code == 2 and "budget" in result.output
    assert alive_while_loading == [1, 1] and _armlab_workers() == []
