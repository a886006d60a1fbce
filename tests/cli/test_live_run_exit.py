"""``armlab run`` on a live source: a run in which no trial returned a result fails loudly
(it has no answer), and a run's recommendation is printed by arm name."""

from __future__ import annotations

import re

from pathlib import Path

from click.testing import CliRunner

from armlab.cli import cli

CONFIG = """\
name = "live-exit"
replicas = 1
[problem]
objective = "best-arm"
budget = 12
[source]
plugin = "callback"
function = "{module}:trial"
arms = ["A", "B", "C"]
reward_min = 0
reward_max = 1
[[policies]]
plugin = "uniform"
"""


def _run(tmp_path: Path, monkeypatch, module: str, body: str, *options: str):
    """Run a live experiment whose trials call ``trial(trial)`` of a module written here."""
    (tmp_path / f"{module}.py").write_text(f"def trial(trial):\n    {body}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "live.toml"
    config.write_text(CONFIG.format(module=module), encoding="utf-8")
    return CliRunner().invoke(cli, ["--no-plugins", "run", str(config), *options])


def test_a_live_run_whose_trials_all_failed_exits_with_an_error(tmp_path, monkeypatch):
    out = tmp_path / "out"
    result = _run(tmp_path, monkeypatch, "armlab_ux_failing_trials", "raise RuntimeError('instrument offline')",
                  "--out", str(out))
    assert result.exit_code == 2, result.output
    assert re.search(r"uniform +12 +0 +12 ", result.stdout)  # trials, completed, failed
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [(
        "Error: live run 'uniform': none of its 12 trials returned a result (12 failed, 0 abandoned), so its "
        "recommendation means nothing; the log (--log FILE) gives each failure's reason (a command, module or "
        "URL that cannot be reached from here fails every trial)"
    )]
    assert (out / "summary.json").is_file()  # what happened is still written down


def test_a_live_recommendation_is_printed_by_arm_name(tmp_path, monkeypatch):
    result = _run(tmp_path, monkeypatch, "armlab_ux_arm_b_wins", "return 1.0 if trial.arm == 1 else 0.0")
    assert result.exit_code == 0, result.output
    assert re.search(r"uniform +12 +12 +0 +B \(arm 1\)", result.stdout)  # trials, completed, failed, answer


def test_a_live_run_without_a_journal_does_not_replace_its_results(tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = _run(tmp_path, monkeypatch, "armlab_ux_live_twice", "return 1.0", "--out", str(out))
    assert first.exit_code == 0, first.output
    again = _run(tmp_path, monkeypatch, "armlab_ux_live_twice", "return 1.0", "--out", str(out))
    assert again.exit_code == 2, again.output
    assert "holds the results of this live experiment: another run gets other trials" in again.stderr
