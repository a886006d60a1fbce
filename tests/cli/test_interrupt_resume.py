"""Ctrl-C on a simulated run keeps every finished task; the same command continues it and
gives the numbers of an uninterrupted run, bit for bit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from armlab import ConfigError, run_experiment
from armlab.orchestrator.montecarlo.scale.saved_tasks import RunInterrupted
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner

CONFIG = """\
name = "resume"
seed = 7
replicas = 2000
checkpoint_every = 500
[problem]
objective = "regret"
budget = 2000
[source]
plugin = "bernoulli"
means = [0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25]
[[policies]]
plugin = "ucb1"
[[policies]]
plugin = "thompson"
[[policies]]
plugin = "moss"
[[policies]]
plugin = "thompson"
label = "thompson-again"
[[policies]]
plugin = "eucbv"
"""

#: Timings differ from run to run; everything else must not.
TIMED = ("wall_seconds", "run_steps_per_second", "finished_at", "command")


def _numbers(summary: Any) -> Any:
    """``summary`` as JSON would hold it, without wall times, the finishing time and the command."""
    if isinstance(summary, dict):
        return {k: _numbers(v) for k, v in summary.items() if k not in TIMED}
    if isinstance(summary, list):
        return [_numbers(v) for v in summary]
    return summary


def _read(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _armlab(*args: str) -> list[str]:
    return [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", *args]


@pytest.fixture(scope="module")
def reference(tmp_path_factory, registry) -> tuple[Path, dict[str, Any]]:
    """The config file and the summary of its uninterrupted run."""
    folder = tmp_path_factory.mktemp("reference")
    config = folder / "resume.toml"
    config.write_text(CONFIG, encoding="utf-8")
    run_experiment(config, registry=registry, out_dir=folder / "out")
    return config, _read(folder / "out")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.system
def test_sigint_keeps_finished_tasks_and_the_same_command_resumes_bit_identically(reference, tmp_path, workers):
    config, expected = reference
    out = tmp_path / "out"
    command = _armlab("run", str(config), "--out", str(out), "--workers", workers)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # liveness only
    while not list((out / "tasks").glob("*.npz")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no task finished"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted: the finished tasks are saved in" in stderr and "Aborted!" not in stderr

    partial = _read(out)
    assert partial["partial"] is True and partial["missing"]
    unfinished = {entry["policy"] for entry in partial["missing"]}
    assert set(partial["policies"]) | unfinished == set(expected["policies"])
    for label, entry in partial["policies"].items():  # a finished policy has its final numbers
        assert _numbers(entry) == _numbers(expected["policies"][label])
    assert (out / "results.csv").exists()  # every sink wrote the partial summary

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line)["event"] for line in resumed.stderr.splitlines()]
    assert "tasks_resumed" in events
    final = _read(out)
    assert "partial" not in final
    assert _numbers(final) == _numbers(expected)
    assert not (out / "tasks").exists()  # nothing left to resume


@pytest.mark.parametrize("first, second", [(ShardRunner(), ShardRunner(shard_size=7)),
                                           (ShardRunner(shard_size=5), ShardRunner())])
def test_a_sweep_resumed_with_another_split_gives_the_same_numbers(registry, tmp_path, first, second):
    config = {"name": "sweep-resume", "seed": 3, "replicas": 16, "checkpoint_every": 20,
              "problem": {"objective": "best-arm", "budget": 60},
              "source": {"plugin": "bernoulli", "means": [0.7, 0.5, 0.4]},
              "policies": [{"plugin": "uniform"}, {"plugin": "ucb1"}, {"plugin": "thompson"}],
              "sweep": {"parameter": "problem.budget", "values": [40, 60]}}
    expected = run_experiment(config, registry=registry)
    labels: list[str] = []

    def interrupt_at_the_third_label(label: str, done: int, total: int) -> None:
        if label not in labels:
            labels.append(label)
        if len(labels) == 3:
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as stopped:
        run_experiment(config, registry=registry, out_dir=tmp_path, scale=first, progress=interrupt_at_the_third_label)
    assert stopped.value.summary["partial"] is True and stopped.value.summary["missing"]
    assert _read(tmp_path)["missing"] == stopped.value.summary["missing"]
    assert list((tmp_path / "tasks").glob("*.npz"))
    resumed = run_experiment(config, registry=registry, out_dir=tmp_path, scale=second)
    assert _numbers(resumed) == _numbers(expected)


def test_saved_tasks_of_another_experiment_are_refused(registry, tmp_path):
    config = {"name": "one", "seed": 1, "replicas": 10, "problem": {"objective": "regret", "budget": 30},
              "source": {"plugin": "bernoulli", "means": [0.6, 0.4]}, "policies": [{"plugin": "ucb1"}]}

    def interrupt(label: str, done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        run_experiment(config, registry=registry, out_dir=tmp_path, progress=interrupt)
    with pytest.raises(ConfigError, match=r"another experiment .* remove .*tasks"):
        run_experiment({**config, "seed": 2}, registry=registry, out_dir=tmp_path)


LIVE_CONFIG = """\
name = "slow-live"
checkpoint_every = 5
replicas = 1
[problem]
objective = "best-arm"
budget = 100000
[source]
plugin = "callback"
function = "slow_trial:trial"
arms = ["A", "B"]
reward_min = 0
reward_max = 1
[[policies]]
plugin = "uniform"
"""


@pytest.mark.timeout(120)
@pytest.mark.system
def test_sigint_of_a_journaled_live_run_says_the_journal_holds_it_and_how_to_resume(tmp_path):
    (tmp_path / "slow_trial.py").write_text(
        "import time\n\ndef trial(trial):\n    time.sleep(0.01)\n    return 1.0\n", encoding="utf-8")
    config = tmp_path / "live.toml"
    config.write_text(LIVE_CONFIG, encoding="utf-8")
    journal, log = tmp_path / "run.sqlite", tmp_path / "run.log"
    process = subprocess.Popen(_armlab("run", str(config), "--journal", str(journal), "--log", str(log)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # liveness only
    while not log.exists() or "\"checkpoint\"" not in log.read_text(encoding="utf-8"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no checkpoint reached"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    advice = [line for line in stderr.splitlines() if line.startswith("interrupted:")]
    assert advice == [f"interrupted: the journal {journal} holds the run (every trial reported so far); "
                      f"continue it with armlab resume {journal}, or run the same command again"]
    assert "--out DIR" not in stderr

