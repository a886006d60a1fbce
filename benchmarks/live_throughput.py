"""Trials per second of armlab's live path (not a test).

Three layers, each with up to ``--in-flight`` trials pending (UCB1, 4 arms, rewards in [0, 1]):

* the in-process ask/tell loop (:class:`armlab.orchestrator.live.experiment.LiveExperiment`): logging
  off, JSON logging on, JSON logging plus the SQLite journal (one fsync'ed commit per event);
* the orchestrator's live path (:class:`armlab.orchestrator.live.run.LiveRun` over an async
  callback source that answers at once): JSON logging on, then plus the journal (group commit);
* the HTTP service: `armlab serve` in a child process (journal and JSON log on), driven over
  loopback by ``--clients`` concurrent ask+tell workers; figure = ask+tell pairs per second.

    python benchmarks/live_throughput.py [--trials 4000] [--in-flight 16] [--http-trials 1500] [--clients 16]

Prints the figures and writes them to benchmarks/results/live_throughput.json.  The journal
lives in a temporary directory: its speed is the speed of fsync on that disk.  Each figure
comes in two forms: per wall-clock second, and per CPU second of the process doing the work
(this process, or the server for HTTP), which stays meaningful on a shared, loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
import structlog

from armlab.config import validate_config
from armlab.log import configure_logging
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import build_plan
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry

TOKEN = "b" * 32
RESULTS = Path(__file__).resolve().parent / "results" / "live_throughput.json"


def config(source: dict, budget: int, in_flight: int):
    return validate_config({
        "name": "bench", "seed": 1, "problem": {"objective": "best-arm", "budget": budget},
        "source": {"arms": 4, "reward_min": 0, "reward_max": 1, **source},
        "feedback": {"in_flight": in_flight}, "policies": [{"plugin": "ucb1"}],
    })


def reward(arm: int, pull: int) -> float:
    return float((arm * 7919 + pull * 104729) % 10 < 3 + arm)


async def instant(trial) -> float:
    return reward(trial.arm, trial.pull)


def quiet_logs() -> None:
    structlog.configure(processors=[structlog.processors.JSONRenderer()],
                        wrapper_class=structlog.make_filtering_bound_logger(50),
                        logger_factory=structlog.WriteLoggerFactory(file=open(os.devnull, "w")))  # noqa: SIM115


def json_logs(tmp: Path) -> None:
    configure_logging(stream=open(tmp / "events.jsonl", "a", encoding="utf-8"), json=True)  # noqa: SIM115


def _session(registry: Registry, cfg, journal: Path | None) -> LiveSession:
    if journal is None:
        return LiveSession.from_plan(build_plan(cfg, registry))
    return LiveSession.open(journal=journal, config=cfg, registry=registry)


def asktell_loop(registry: Registry, tmp: Path, trials: int, in_flight: int, journal: bool) -> tuple[float, float]:
    """ask until the in-flight slots are full, tell the oldest pending trial, repeat."""
    cfg = config({"plugin": "external"}, trials, in_flight)
    path = tmp / f"asktell-{time.monotonic_ns()}.sqlite" if journal else None
    session = _session(registry, cfg, path)
    exp = session.experiment
    pending: list = []
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(trials):
        if len(pending) == in_flight:
            oldest = pending.pop(0)
            exp.tell(oldest.id, reward(oldest.arm, oldest.pull))
        pending.append(exp.ask())
    for trial in pending:
        exp.tell(trial.id, reward(trial.arm, trial.pull))
    rates = trials / (time.perf_counter() - start), trials / (time.process_time() - cpu)
    session.close()
    return rates


async def live_run(registry: Registry, tmp: Path, trials: int, in_flight: int, journal: bool) -> tuple[float, float]:
    cfg = config({"plugin": "callback", "function": f"{__name__}:instant"}, trials, in_flight)
    path = tmp / f"live-{time.monotonic_ns()}.sqlite"
    session = _session(registry, cfg, path if journal else None)
    start, cpu = time.perf_counter(), time.process_time()
    async with session.group_commit():
        await session.live_run().run()
    rates = trials / (time.perf_counter() - start), trials / (time.process_time() - cpu)
    assert session.experiment.counters.completed == trials
    session.close()
    return rates


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


async def http_service(tmp: Path, trials: int, clients: int) -> tuple[float, float]:
    toml = tmp / "service.toml"
    toml.write_text(
        f'name = "bench"\nseed = 1\n[problem]\nobjective = "best-arm"\nbudget = {trials}\n'
        '[source]\nplugin = "external"\narms = 4\nreward_min = 0\nreward_max = 1\n'
        f'[feedback]\nin_flight = {clients}\n[[policies]]\nplugin = "ucb1"\n'
    )
    server = subprocess.Popen(
        [sys.executable, "-c", "from armlab.cli import main; main()", "serve", str(toml),
         "--journal", str(tmp / "service.sqlite"), "--port", "0", "--log", str(tmp / "service.jsonl")],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "ARMLAB_TOKEN": TOKEN},
    )
    assert server.stdout is not None
    banner = server.stdout.readline()
    url = "http://" + banner.split("http://")[1].split()[0]
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, limits=limits) as http:

        async def worker() -> None:
            while True:
                answer = await http.post("/ask", json={"wait": 5})
                if answer.status_code == 409:
                    if answer.json()["state"] == "in_flight_full":
                        continue
                    return
                trial = answer.json()
                told = await http.post("/tell", json={"trial_id": trial["trial_id"],
                                                      "reward": reward(trial["arm"], trial["pull"])})
                told.raise_for_status()

        start, cpu = time.perf_counter(), _cpu_seconds(server.pid)
        await asyncio.gather(*(worker() for _ in range(clients)))
        rates = trials / (time.perf_counter() - start), trials / (_cpu_seconds(server.pid) - cpu)
        finished = (await http.get("/status")).json()["completed"]
    server.terminate()
    server.communicate(timeout=60)
    assert finished == trials
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--http-trials", type=int, default=1500)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    registry = Registry(get_plugin_manager(load_entrypoints=False))
    n, k = args.trials, args.in_flight
    figures: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        quiet_logs()
        figures["asktell_no_logging"] = asktell_loop(registry, tmp, n, k, journal=False)
        json_logs(tmp)
        figures["asktell_json_logging"] = asktell_loop(registry, tmp, n, k, journal=False)
        figures["asktell_json_logging_journal"] = asktell_loop(registry, tmp, min(n, 1000), k, journal=True)
        figures["liverun_json_logging"] = anyio.run(live_run, registry, tmp, n, k, False)
        figures["liverun_json_logging_journal"] = anyio.run(live_run, registry, tmp, n, k, True)
        quiet_logs()
        figures["http_ask_tell_pairs"] = anyio.run(http_service, tmp, args.http_trials, args.clients)
    report = {
        "per_wall_second": {key: round(wall, 1) for key, (wall, _) in figures.items()},
        "per_cpu_second": {key: round(cpu, 1) for key, (_, cpu) in figures.items()},
        "trials": n, "in_flight": k, "http_trials": args.http_trials, "clients": args.clients,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "command": "python benchmarks/live_throughput.py " + " ".join(sys.argv[1:]),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'':<32} {'per wall s':>12} {'per CPU s':>12}")
    for key, (wall, cpu) in figures.items():
        print(f"{key:<32} {wall:>12.1f} {cpu:>12.1f}")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus) -> {RESULTS}")


if __name__ == "__main__":
    main()
