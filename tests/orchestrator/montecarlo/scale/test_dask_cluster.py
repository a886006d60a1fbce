"""The README's recipe for a cluster past one machine, run on this one: `dask scheduler` and
`dask worker` as Dask starts them (subprocesses on free ports of 127.0.0.1, bounded waits,
killed at the end), then `armlab run --executor dask --scheduler ADDRESS`, which must give
the numbers of a run in one process and bring its finished tasks back to `--out`."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from armlab import run_experiment

pytest.importorskip("distributed")

pytestmark = pytest.mark.system

REPO = Path(__file__).resolve().parents[4]
BIN = Path(sys.executable).parent
REPLICAS = "6"
START_TIMEOUT_S = 90
RUN_TIMEOUT_S = 300


def recipe() -> list[str]:
    """The three command lines of the README's recipe, comments dropped."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- scaling-out-recipe -->\s*```text\n(.*?)```", readme, re.S)
    assert block, "README.md must keep the scaling-out recipe block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def on_this_machine(line: str, port: int, out: Path) -> list[str]:
    """A recipe line for one machine: every host is 127.0.0.1, the port a free one, --out in tmp."""
    line = line.replace("0.0.0.0", "127.0.0.1").replace("SCHEDULER", "127.0.0.1").replace("8786", str(port))
    argv = shlex.split(line)
    if argv[0] == "armlab":
        argv[argv.index("--out") + 1] = str(out)
        argv += ["--replicas", REPLICAS]
    argv[0] = str(BIN / argv[0])
    return argv


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen]]:
    processes: list[subprocess.Popen] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def start(argv: list[str], log: Path, processes: list[subprocess.Popen]) -> None:
    with log.open("w") as handle:
        processes.append(subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO,
                                          start_new_session=True))


def wait_for_workers(address: str, count: int) -> None:
    from distributed import Client

    with Client(address, timeout=START_TIMEOUT_S) as client:
        client.wait_for_workers(count, timeout=START_TIMEOUT_S)


def test_readme_recipe_runs_on_a_cluster_started_by_dasks_own_commands(tmp_path, started):
    scheduler, worker, run = recipe()
    assert scheduler.startswith("dask scheduler ") and worker.startswith("dask worker ")
    assert run.startswith("armlab run ") and "--executor dask --scheduler tcp://SCHEDULER:8786" in run
    port = free_port()
    out = tmp_path / "out"
    start(on_this_machine(scheduler, port, out), tmp_path / "scheduler.log", started)
    start(on_this_machine(worker, port, out), tmp_path / "worker.log", started)
    try:
        wait_for_workers(f"tcp://127.0.0.1:{port}", 2)
    except Exception as exc:  # noqa: BLE001 - say what the processes said
        logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in tmp_path.glob("*.log"))
        pytest.fail(f"the cluster did not start within {START_TIMEOUT_S} s ({exc}):\n{logs}")
    argv = on_this_machine(run, port, out)
    began = time.perf_counter()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    alone = run_experiment(REPO / "examples/thresholding/exp1.toml", replicas=int(REPLICAS))
    ours = {label: p["error_rate"] for label, p in summary["policies"].items()}
    assert ours == {label: p["error_rate"] for label, p in alone["policies"].items()}
    assert not (out / "tasks").exists()  # every task came back and the summary is whole
    print(f"armlab run on the cluster: {time.perf_counter() - began:.1f} s")
