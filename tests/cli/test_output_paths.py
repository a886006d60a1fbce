"""Output paths: every one is checked before any work, and figures land where they should.

``/proc`` stands for a place nobody can write (CI runs as root, so a chmod would not stop
it): creating anything there fails with "No such file or directory".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from armlab.cli import cli

UNWRITABLE = Path("/proc/armlab_out")

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc as an unwritable place")

CONFIG = """\
name = "paths"
seed = 3
replicas = 6
checkpoint_every = 100
[problem]
objective = "{objective}"
budget = 200
[source]
plugin = "bernoulli"
means = [0.6, 0.5, 0.4]
[[policies]]
plugin = "ucb1"
"""


def _config(tmp_path: Path, objective: str = "regret") -> Path:
    path = tmp_path / f"{objective}.toml"
    path.write_text(CONFIG.format(objective=objective), encoding="utf-8")
    return path


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["--no-plugins", *args])


def _refused_before_work(result, option: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1 and error_lines[0].startswith(f"Error: {option} /proc/"), result.stderr
    assert "experiment_started" not in result.stderr  # refused before the run began


def test_run_refuses_an_out_directory_it_cannot_create_before_running(tmp_path):
    result = _invoke("run", str(_config(tmp_path)), "--out", str(UNWRITABLE))
    _refused_before_work(result, "--out")
    assert "No such file or directory" in result.stderr


def test_run_refuses_a_log_file_it_cannot_create_before_running(tmp_path):
    result = _invoke("run", str(_config(tmp_path)), "--log", "/proc/x.jsonl")
    _refused_before_work(result, "--log")


def test_run_creates_missing_out_and_log_directories(tmp_path):
    out, log = tmp_path / "a" / "b", tmp_path / "logs" / "run.jsonl"
    result = _invoke("run", str(_config(tmp_path)), "--out", str(out), "--log", str(log))
    assert result.exit_code == 0, result.output
    assert (out / "summary.json").is_file() and "experiment_finished" in log.read_text(encoding="utf-8")


def test_plot_refuses_an_unwritable_target_and_a_json_that_is_no_summary(tmp_path, single_run):
    summary = tmp_path / "s.json"
    summary.write_text(json.dumps(single_run("regret", a={"regret_mean": [1.0, 2.0, 3.0]})), encoding="utf-8")
    result = _invoke("plot", str(summary), "--out", "/proc/x.png")
    assert result.exit_code == 2 and "Error: --out /proc/x.png: cannot create" in result.stderr, result.output
    fake = tmp_path / "fake.json"
    fake.write_text(json.dumps({"name": "not a summary"}), encoding="utf-8")
    result = _invoke("plot", str(fake))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f'Error: {fake}: not an armlab summary (no "policies" object); '
        "give the summary.json that `armlab run --out DIR` writes"
    )


def test_new_plugin_refuses_a_directory_it_cannot_create(tmp_path):
    result = _invoke("new-plugin", "fresh-idea", "--dir", "/proc/armlab-fresh-idea")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: --dir /proc/armlab-fresh-idea: cannot create this directory")


def test_a_results_directory_with_a_dot_gets_its_figures(tmp_path):
    out = tmp_path / "results" / "run.v2"
    result = _invoke("run", str(_config(tmp_path)), "--out", str(out), "--plot")
    assert result.exit_code == 0, result.output
    assert "no figures" not in result.stderr
    assert (out / "regret-vs-time.png").is_file()
    other = tmp_path / "figures.v3"
    result = _invoke("plot", str(out / "summary.json"), "--out", str(other))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(other / "regret-vs-time.png") and (other / "regret-vs-time.png").is_file()


def test_figures_of_an_earlier_run_do_not_stay_in_a_reused_out_directory(tmp_path):
    out = tmp_path / "out"
    first = _invoke("run", str(_config(tmp_path, "regret")), "--out", str(out), "--plot")
    assert first.exit_code == 0 and (out / "regret-vs-time.png").is_file(), first.output
    second = _invoke("run", str(_config(tmp_path, "best-arm")), "--out", str(out), "--plot", "--overwrite")
    assert second.exit_code == 0, second.output
    assert {p.name for p in out.iterdir()} == {"summary.json", "results.csv", "error-vs-time.png"}
    assert f"removed the figures of an earlier run: {out / 'regret-vs-time.png'}" in second.stderr
    third = _invoke("run", str(_config(tmp_path, "regret")), "--out", str(out), "--overwrite")  # no figure fits
    assert third.exit_code == 0, third.output
    assert {p.name for p in out.iterdir()} == {"summary.json", "results.csv"}


def test_a_finished_run_is_not_replaced_by_another_without_overwrite(tmp_path):
    out, config = tmp_path / "out", str(_config(tmp_path))
    assert _invoke("run", config, "--out", str(out)).exit_code == 0
    finished = (out / "summary.json").read_bytes()
    for options, differs in [(["--replicas", "2"], "replicas: 6 -> 2"), (["--seed", "4"], "seed: 3 -> 4")]:
        result = _invoke("run", config, "--out", str(out), *options)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            f"Error: --out {out} holds the results of another run ({differs}); give --overwrite to replace them, "
            "or choose another --out")
        assert "experiment_started" not in result.stderr and (out / "summary.json").read_bytes() == finished
    other = tmp_path / "other.toml"
    other.write_text(CONFIG.format(objective="regret").replace("budget = 200", "budget = 300"), encoding="utf-8")
    result = _invoke("run", str(other), "--out", str(out))
    assert result.exit_code == 2 and "(problem.budget: 200 -> 300)" in result.stderr, result.output


def test_the_same_run_again_is_allowed_and_overwrite_replaces_another(tmp_path):
    out, config = tmp_path / "out", str(_config(tmp_path))
    assert _invoke("run", config, "--out", str(out)).exit_code == 0
    again = _invoke("run", config, "--out", str(out))  # same settings: same numbers
    assert again.exit_code == 0, again.output
    replaced = _invoke("run", config, "--out", str(out), "--replicas", "2", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["replicas"] == 2


def test_results_that_do_not_say_their_config_are_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}", encoding="utf-8")
    result = _invoke("run", str(_config(tmp_path)), "--out", str(out))
    assert result.exit_code == 2 and "holds results that do not say which config made them" in result.stderr
