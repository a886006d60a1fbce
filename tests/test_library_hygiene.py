"""armlab used as a library is quiet: its loggers write only once the application configured structlog."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import structlog
from structlog.testing import capture_logs

from armlab.errors import ConfigError
from armlab.events import ExperimentStopped, ReportLate, TrialDispatched, TrialFailed
from armlab.log import configure_logging, get_logger, log_event

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.system
def test_running_an_experiment_prints_nothing_unless_logging_was_configured():
    code = "import armlab; armlab.run_experiment('examples/quickstart.toml', replicas=20)"
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_library_loggers_follow_a_configuration_made_after_they_were_created(capsys):
    log = get_logger("armlab.test")  # created while structlog is unconfigured
    structlog.reset_defaults()
    log.info("unheard", x=1)
    assert capsys.readouterr().out == ""
    with capture_logs() as logs:
        log.info("heard", x=2)
    assert logs == [{"event": "heard", "x": 2, "log_level": "info"}]


def test_log_event_writes_the_event_fields_with_a_level_by_kind(capsys):
    structlog.reset_defaults()
    log_event(TrialDispatched(trial=0, bandit=0, arm=2, pull=0))
    assert capsys.readouterr().out == ""  # silent until configured, like every armlab logger
    with capture_logs() as logs:
        log_event(TrialDispatched(trial=0, bandit=0, arm=2, pull=0))
        log_event(TrialFailed(trial=0, bandit=0, arm=2, reason="timed out"))
        log_event(ReportLate(trial=0, bandit=0, arm=2, reward=0.5))
        log_event(ExperimentStopped(reason="budget", trials=10))
    assert logs == [
        {"event": "trial_dispatched", "trial": 0, "bandit": 0, "arm": 2, "pull": 0, "log_level": "debug"},
        {"event": "trial_failed", "trial": 0, "bandit": 0, "arm": 2, "reason": "timed out", "log_level": "warning"},
        {"event": "report_late", "trial": 0, "bandit": 0, "arm": 2, "reward": 0.5, "log_level": "warning"},
        {"event": "experiment_stopped", "reason": "budget", "trials": 10, "log_level": "info"},
    ]


def test_the_log_level_comes_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    for level, lines in (("info", 1), ("debug", 2)):
        monkeypatch.setenv("ARMLAB_LOG_LEVEL", level)
        with open(path, "w", encoding="utf-8") as stream:
            configure_logging(stream=stream, json=True)
            log_event(TrialDispatched(trial=0, bandit=0, arm=2, pull=0))
            log_event(ExperimentStopped(reason="budget", trials=1))
        assert len(path.read_text().splitlines()) == lines
    monkeypatch.setenv("ARMLAB_LOG_LEVEL", "chatty")
    with pytest.raises(ConfigError, match="ARMLAB_LOG_LEVEL='chatty' is not a log level"):
        configure_logging(stream=None)
    structlog.reset_defaults()
