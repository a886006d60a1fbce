"""Dask workers never print: what a task logs comes back to this process's log, as it does
from local worker processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

# ten arms and budget 200 < 10**2.4: eucbv logs eucbv_short_horizon whenever it starts
CONFIG = """\
name = "worker-logs"
seed = 2
replicas = 20
[problem]
objective = "regret"
budget = 200
[source]
plugin = "bernoulli"
means = [0.6, 0.5, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.3]
[[policies]]
plugin = "eucbv"
[[policies]]
plugin = "ucb1"
"""


def _run(config, *options: str) -> tuple[list[str], list[str]]:
    """stdout lines and the events of the JSON log on stderr of ``armlab run``."""
    done = subprocess.run(
        [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "run", str(config), *options],
        capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONUNBUFFERED": "1"}, check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines(), [json.loads(line)["event"] for line in done.stderr.splitlines()]


@pytest.mark.timeout(300)
def test_dask_worker_logs_reach_this_process_log_and_never_stdout(tmp_path):
    pytest.importorskip("distributed")
    config = tmp_path / "c.toml"
    config.write_text(CONFIG, encoding="utf-8")
    local_out, local_events = _run(config, "--workers", "2")
    dask_out, dask_events = _run(config, "--workers", "2", "--executor", "dask")
    assert not any(line.lstrip().startswith("{") for line in dask_out)  # the table only
    assert dask_out[2:] and [line.split()[0] for line in dask_out[2:]] == ["eucbv", "ucb1"]
    # the dry run here and the task on a worker both warn, wherever the task ran
    assert dask_events.count("eucbv_short_horizon") == local_events.count("eucbv_short_horizon") == 2
