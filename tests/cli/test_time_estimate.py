"""Before a long run: ``armlab validate`` estimates its time from a short probe, ``armlab run``
logs that estimate off a terminal and then its progress every 5 s.  No wall-clock value is
asserted: only that an estimate is a positive number with a unit, and the log's pace (a fake
clock)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import structlog
from click.testing import CliRunner

from armlab.cli import cli
from armlab.cli.progress_log import PROGRESS_LOG_SECONDS, ProgressLog
from armlab.cli.time_estimate import format_duration
from armlab.log import configure_logging

CONFIG = """\
name = "estimate"
replicas = 50
[problem]
objective = "best-arm"
budget = 400
[source]
plugin = "bernoulli"
means = [0.6, 0.5, 0.4]
[[policies]]
plugin = "ucb1"
[[policies]]
plugin = "uniform"
[sweep]
parameter = "problem.budget"
values = [200, 400]
"""

ESTIMATE = re.compile(r"about (\d+(?:\.\d+)?) (s|min|h)")


def _config(tmp_path: Path) -> str:
    path = tmp_path / "estimate.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return str(path)


def _positive_with_unit(text: str) -> None:
    match = ESTIMATE.fullmatch(text)
    assert match is not None and float(match.group(1)) > 0, text


def test_validate_prints_an_estimated_time(tmp_path):
    result = CliRunner().invoke(cli, ["--no-plugins", "validate", _config(tmp_path)])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("estimated time: ")]
    _positive_with_unit(line.removeprefix("estimated time: ").split(" in one process")[0])


def test_run_off_a_terminal_logs_the_estimate_before_it_starts(tmp_path):
    log = tmp_path / "run.jsonl"
    result = CliRunner().invoke(cli, ["--no-plugins", "run", _config(tmp_path), "--log", str(log)])
    structlog.reset_defaults()  # the command configured logging into a file it has closed
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["event"] for e in events][:2] == ["time_estimated", "experiment_started"]
    assert events[0]["seconds"] > 0 and events[0]["processes"] == 1
    _positive_with_unit(events[0]["estimate"])


def test_progress_is_logged_every_five_seconds_off_a_terminal():
    assert PROGRESS_LOG_SECONDS == 5.0
    now = [100.0]
    stream = io.StringIO()
    configure_logging(stream=stream, json=True)
    try:
        progress = ProgressLog({"a": 1000, "b": 1000}, clock=lambda: now[0])
        for step in range(1, 41):  # a report every second for 40 seconds
            now[0] += 1.0
            progress("a" if step <= 20 else "b", 50 * (step if step <= 20 else step - 20), 1000)
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["elapsed_seconds"] for line in lines] == [5.0 * k for k in range(1, 9)]
    assert lines[0] | {"timestamp": None} == {
        "event": "progress", "trials": 250, "total": 2000, "percent": 12.5, "elapsed_seconds": 5.0,
        "seconds_left": 35.0, "level": "info", "timestamp": None}


def test_durations_read_as_a_number_and_a_unit():
    assert [format_duration(s) for s in (0.0, 3.14159, 45, 200, 5400, 36000)] == [
        "about 0.01 s", "about 3.1 s", "about 45 s", "about 3.3 min", "about 1.5 h", "about 10 h"]
