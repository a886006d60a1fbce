"""HTTP throughput of `armlab serve` against a bare FastAPI app, measured by a light client (not a test).

Three servers, each a child process on the same stack (FastAPI on uvicorn, h11), driven in
turn by the same client in this process:

* ``bare``: a FastAPI app with the same two routes and no work behind them (``/ask``
  returns a trial, ``/tell`` accepts it): the ceiling of the stack;
* ``armlab``: ``armlab serve`` with its journal (every acknowledged call durable), UCB1 on
  4 arms, ``--clients`` trials in flight;
* ``armlab-batch``: the same service through ``/ask/batch`` and ``/tell/batch``
  (``--batch`` trials per request).

The client is ``--clients`` keep-alive connections written on raw asyncio streams (a
request is a few bytes, a response is parsed by its Content-Length), so it costs far less
CPU than the server; its CPU time is reported beside each figure, with the server's.  The
in-process ask/tell core's rate (no HTTP, no journal) comes from the same run.

    python benchmarks/service_throughput.py [--pairs 3000] [--batch 100] [--batches 200] [--clients 16]

Writes benchmarks/results/service_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

HERE = Path(__file__).resolve()
RESULTS = HERE.parent / "results" / "service_throughput.json"
TOKEN = "b" * 32


class BareTell(BaseModel):
    """The bare app's report body (validated like the service's)."""

    trial_id: int
    reward: float


def bare_server() -> None:
    """Child mode: serve the bare app on a free loopback port; print the port."""
    import itertools

    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()
    ids = itertools.count()

    @app.post("/ask")
    async def ask() -> dict:
        return {"trial_id": next(ids), "arm": 0, "arm_name": "a", "bandit": 0, "pull": 0, "status": "pending"}

    @app.post("/tell")
    async def tell(body: BareTell) -> dict:
        return {"trial_id": body.trial_id, "status": "accepted", "message": ""}

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # so asyncio sets TCP_NODELAY,
    sock.bind(("127.0.0.1", 0))  # as `armlab serve` does
    sock.listen(128)
    print(f"serving http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, http="h11", log_config=None, access_log=False)).run(sockets=[sock])


class Connection:
    """One keep-alive HTTP/1.1 connection: POST JSON, read the JSON answer.

    ``prefix`` is put before every path (``/experiments/NAME`` on ``armlab server``) and
    ``token`` is sent as the bearer token."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str = TOKEN,
                 prefix: str = "") -> None:
        self.reader, self.writer = reader, writer
        self.head = f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        self.prefix = prefix

    async def post(self, path: str, body: dict) -> tuple[int, dict]:
        data = json.dumps(body).encode()
        self.writer.write(
            f"POST {self.prefix}{path} HTTP/1.1\r\n{self.head}Content-Length: {len(data)}\r\n\r\n".encode() + data
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return status, json.loads(await self.reader.readexactly(length))


#: Where the clients send their requests: ``(path prefix, bearer token)`` of one experiment.
Target = tuple[str, str]
SERVE: list[Target] = [("", TOKEN)]  # the one experiment of ``armlab serve`` (and the bare app)


async def connect(port: int, clients: int, targets: list[Target] = SERVE) -> list[Connection]:
    """``clients`` connections to each of ``targets``."""
    return [Connection(*await asyncio.open_connection("127.0.0.1", port), token, prefix)
            for prefix, token in targets for _ in range(clients)]


async def drive_pairs(port: int, clients: int, pairs: int, targets: list[Target] = SERVE) -> int:
    """ask + tell (``clients`` connections per target) until ``pairs`` pairs are done in all;
    returns the pairs done."""
    done = 0
    connections = await connect(port, clients, targets)

    async def worker(conn: Connection) -> None:
        nonlocal done
        while done < pairs:
            status, trial = await conn.post("/ask", {"wait": 5})
            if status != 200:
                if trial.get("state") == "in_flight_full":
                    continue
                return
            status, _ = await conn.post("/tell", {"trial_id": trial["trial_id"], "reward": float(trial["arm"] == 1)})
            assert status == 200, status
            done += 1

    await asyncio.gather(*(worker(c) for c in connections))
    for conn in connections:
        conn.writer.close()
    return done


async def drive_batches(port: int, clients: int, batch: int, batches: int, targets: list[Target] = SERVE) -> int:
    """/ask/batch + /tell/batch of ``batch`` trials; returns the trials done."""
    done, started = 0, 0
    connections = await connect(port, clients, targets)

    async def worker(conn: Connection) -> None:
        nonlocal done, started
        while started < batches:
            started += 1
            status, answer = await conn.post("/ask/batch", {"count": batch})
            if status != 200:
                return
            reports = [{"trial_id": t["trial_id"], "reward": float(t["arm"] == 1)} for t in answer["trials"]]
            status, told = await conn.post("/tell/batch", {"reports": reports})
            assert status == 200 and all(r["status"] == "accepted" for r in told["results"]), told
            done += len(reports)

    await asyncio.gather(*(worker(c) for c in connections))
    for conn in connections:
        conn.writer.close()
    return done


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def start(argv: list[str]) -> tuple[subprocess.Popen, int]:
    """Start a server child (``ARMLAB_TOKEN`` and ``ARMLAB_ADMIN_TOKEN`` set to :data:`TOKEN`);
    returns it and the port of its banner."""
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "ARMLAB_TOKEN": TOKEN, "ARMLAB_ADMIN_TOKEN": TOKEN})
    assert server.stdout is not None
    banner = server.stdout.readline()
    return server, int(banner.split("http://127.0.0.1:")[1].split()[0].rstrip(")"))


def bench_config(budget: int, in_flight: int) -> str:
    """The benchmark's experiment (UCB1 on 4 arms, ``external`` trials) as TOML text."""
    return (
        f'name = "bench"\nseed = 1\n[problem]\nobjective = "best-arm"\nbudget = {budget}\n'
        '[source]\nplugin = "external"\narms = 4\nreward_min = 0\nreward_max = 1\n'
        f'[feedback]\nin_flight = {in_flight}\n[[policies]]\nplugin = "ucb1"\n'
    )


def armlab_argv(*arguments: str) -> list[str]:
    """An ``armlab`` command (no plugins, any port, no log) run by this interpreter."""
    return [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", *arguments,
            "--port", "0", "--log", os.devnull]


def profiled(argv: list[str], path: str) -> list[str]:
    """``argv`` (an :func:`armlab_argv` command) run under cProfile, statistics to ``path``.

    The event loop's thread is timed by its own CPU time, not the wall clock: the journal's
    worker thread holds the interpreter lock while it hashes the chain, and a wall-clock
    profile charges that wait to whatever the loop's thread was running (a dictionary lookup
    shown at 90 us)."""
    code = ("import cProfile, time\nfrom armlab.cli import main\nprofile = cProfile.Profile(time.thread_time)\n"
            f"try:\n    profile.runcall(main)\nfinally:\n    profile.dump_stats({path!r})")
    return [argv[0], "-c", code, *argv[3:]]


def serve_argv(directory: Path, budget: int, in_flight: int, *options: str) -> list[str]:
    """The ``armlab serve`` command of a fresh journal in ``directory`` (UCB1 on 4 arms, any port)."""
    config = directory / "service.toml"
    config.write_text(bench_config(budget, in_flight))
    return armlab_argv("serve", str(config), "--journal", str(directory / "j.sqlite"), *options)


def measure(argv: list[str], drive, prepare=None) -> dict[str, float]:
    """Start the server ``argv``, await ``prepare(port)`` if given (untimed), then time
    ``drive(port)`` (``drive(port, prepared)`` with what ``prepare`` returned)."""
    server, port = start(argv)
    try:
        prepared = () if prepare is None else (asyncio.run(prepare(port)),)
        wall, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_seconds(server.pid)
        count = asyncio.run(drive(port, *prepared))
        wall = time.perf_counter() - wall
        server_cpu, cpu = cpu_seconds(server.pid) - server_cpu, time.process_time() - cpu
        return {"count": count, "per_second": count / wall, "server_cpu_seconds": server_cpu,
                "client_cpu_seconds": cpu, "wall_seconds": wall,
                "server_cpu_ms_per_1000": 1e6 * server_cpu / count, "client_cpu_ms_per_1000": 1e6 * cpu / count}
    finally:
        server.terminate()
        server.communicate(timeout=60)


def in_process_rate(trials: int, in_flight: int) -> float:
    """The ask/tell core alone (no HTTP, no journal): trials per second."""
    from armlab.config import validate_config
    from armlab.orchestrator.live.session import LiveSession
    from armlab.plan import build_plan
    from armlab.plugins.registry import default_registry

    cfg = validate_config({
        "name": "bench", "seed": 1, "problem": {"objective": "best-arm", "budget": trials},
        "source": {"plugin": "external", "arms": 4, "reward_min": 0, "reward_max": 1},
        "feedback": {"in_flight": in_flight}, "policies": [{"plugin": "ucb1"}],
    })
    exp = LiveSession.from_plan(build_plan(cfg, default_registry(False))).experiment
    pending: list = []
    begin = time.perf_counter()
    for _ in range(trials):
        if len(pending) == in_flight:
            oldest = pending.pop(0)
            exp.tell(oldest.id, float(oldest.arm == 1))
        pending.append(exp.ask())
    for trial in pending:
        exp.tell(trial.id, float(trial.arm == 1))
    return trials / (time.perf_counter() - begin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        bare_server()
        return
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        armlab = serve_argv(Path(tmp), args.pairs + args.batch * args.batches + 1000,
                            max(args.clients, args.batch * args.clients))
        bare = [sys.executable, str(HERE), "--bare-server"]
        figures = {
            "bare_pairs": measure(bare, lambda port: drive_pairs(port, args.clients, args.pairs)),
            "armlab_pairs": measure(armlab, lambda port: drive_pairs(port, args.clients, args.pairs)),
            "armlab_batch_trials": measure(
                armlab, lambda port: drive_batches(port, args.clients, args.batch, args.batches)),
        }
    core = in_process_rate(20000, args.clients)
    result = {
        "command": " ".join(["python", "benchmarks/service_throughput.py", *sys.argv[1:]]),
        "clients": args.clients, "batch": args.batch, "figures": figures,
        "in_process_core_trials_per_second": core,
        "ratio_armlab_to_bare_pairs": figures["armlab_pairs"]["per_second"] / figures["bare_pairs"]["per_second"],
        "ratio_batch_trials_to_core": figures["armlab_batch_trials"]["per_second"] / core,
        "ratio_pairs_to_core": figures["armlab_pairs"]["per_second"] / core,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "figures"}, indent=2))
    for name, figure in figures.items():
        print(f"{name:22s} {figure['per_second']:9.0f}/s  server CPU {figure['server_cpu_seconds']:.2f} s  "
              f"client CPU {figure['client_cpu_seconds']:.2f} s")


if __name__ == "__main__":
    main()
