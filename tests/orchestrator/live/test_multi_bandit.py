"""Live multi-bandit experiments through ``armlab run``: journaled, killed, resumed.

Three live bandits (callbacks) share one budget under greedy confidence pursuit.  The run is
killed with SIGKILL in the middle, the same command resumes it from its journal, and the
result is the one an uninterrupted run gives: every choice is a pure function of the seed
and the journal, and the callbacks answer by (bandit, arm, pull).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from armlab.orchestrator.journal.store import Journal

pytestmark = pytest.mark.system

ANSWERS = textwrap.dedent("""
    import hashlib, os, time

    def assay(trial):
        with open(os.environ["CALLS"], "a") as calls:
            calls.write(f"{trial.id}\\n")
        time.sleep(0.005)
        digest = hashlib.sha256(f"{trial.bandit}/{trial.arm}/{trial.pull}".encode()).digest()
        u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
        return float(u < (0.3, 0.5, 0.6)[trial.arm] - 0.1 * trial.bandit)
""")

CONFIG = textwrap.dedent("""
    name = "three-live-assays"
    seed = 9
    checkpoint_every = 30

    [problem]
    objective = "best-arm"
    budget = 90

    [[bandits]]
    label = "assay-"
    count = 3
    source = {plugin = "callback", function = "answers:assay", arms = 3, reward_min = 0, reward_max = 1}

    [allocator]
    plugin = "gcp-bayes"
    warmup_per_arm = 2

    [feedback]
    in_flight = 1  # results in dispatch order, so the whole run is a function of the seed

    [[policies]]
    plugin = "bayes-topm"
    warmup_per_arm = 2
""")


def _run(tmp_path, journal, out, calls):
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "CALLS": str(calls)}
    return subprocess.Popen(
        [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "run",
         str(tmp_path / "three.toml"), "--journal", str(journal), "--out", str(out)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.timeout(180)
def test_a_killed_multi_bandit_run_resumes_to_the_uninterrupted_result(tmp_path):
    (tmp_path / "answers.py").write_text(ANSWERS)
    (tmp_path / "three.toml").write_text(CONFIG)

    whole = _run(tmp_path, tmp_path / "whole.sqlite", tmp_path / "whole", tmp_path / "whole.calls")
    _, err = whole.communicate(timeout=120)
    assert whole.returncode == 0, err

    calls = tmp_path / "killed.calls"
    killed = _run(tmp_path, tmp_path / "killed.sqlite", tmp_path / "killed", calls)
    deadline = time.monotonic() + 60
    while (not calls.exists() or len(calls.read_text().splitlines()) < 40) and time.monotonic() < deadline:
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    with Journal.open(tmp_path / "killed.sqlite") as journal:
        before = list(journal.events())
    assert 0 < sum(e.kind == "result" for e in before) < 90  # killed in the middle

    again = _run(tmp_path, tmp_path / "killed.sqlite", tmp_path / "killed", calls)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err

    with Journal.open(tmp_path / "whole.sqlite") as journal:
        uninterrupted = [(e.kind, e.trial, e.bandit, e.arm, e.reward) for e in journal.events()]
    with Journal.open(tmp_path / "killed.sqlite") as journal:
        resumed = list(journal.events())
    assert resumed[: len(before)] == before  # nothing acknowledged was lost
    results = {e.trial: (e.bandit, e.arm, e.reward) for e in resumed if e.kind == "result"}
    expected = {t: (b, a, r) for kind, t, b, a, r in uninterrupted if kind == "result"}
    assert results == expected and len({b for b, _, _ in results.values()}) == 3
    summaries = [json.loads((tmp_path / d / "summary.json").read_text())["policies"]["bayes-topm"]
                 for d in ("whole", "killed")]
    for key in ("counts", "means", "recommendation", "recommendations", "bandits", "at_checkpoints"):
        assert summaries[0][key] == summaries[1][key], key
