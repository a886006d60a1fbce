"""HTTP throughput of `armlab server` against a bare FastAPI app, in one run (not a test).

Issue 30's speed targets, each a ratio of figures from the same run, with the client of
``service_throughput.py`` (raw-socket keep-alive connections) and its bare app (FastAPI on
uvicorn, h11, the same two routes and no work behind them):

* ``bare_pairs``: the bare app, ``--clients`` connections: the ceiling of the stack;
* ``serve_pairs``: ``armlab serve --journal`` (one experiment, for comparison);
* ``server_pairs``: one experiment on ``armlab server`` (its client token, the routes
  ``/experiments/NAME/ask`` and ``/tell``), ``--clients`` connections: target >= 0.8x bare;
* ``server_many_pairs``: ``--experiments`` experiments on one server, ``--clients-each``
  connections each, aggregate pairs/s: target >= 0.7x ``server_pairs``;
* ``server_batch_trials``: ``/ask/batch`` + ``/tell/batch`` of ``--batch`` trials on one
  experiment: target >= 20,000 trials/s.

Every server is a fresh process on a fresh storage, its experiments created over HTTP and
opened (one ask+tell each) before the clock starts.  The configurations alternate, round
after round (``--rounds``), and each keeps its fastest round, because the machine may be
shared; server and client CPU time per 1000 pairs (or trials) are reported beside each
figure, and the load average before and after.  ``--profile DIR`` runs every ``armlab
server`` and ``armlab serve`` under cProfile (``DIR/NAME.prof``, the last round's; CPU time of
the event loop's thread).

    python benchmarks/server_throughput.py [--pairs 4000] [--rounds 3]

Writes benchmarks/results/server_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from service_throughput import (
    TOKEN,
    SERVE,
    Connection,
    Target,
    bench_config,
    armlab_argv,
    drive_batches,
    drive_pairs,
    measure,
    profiled,
    serve_argv,
)

HERE = Path(__file__).resolve()
RESULTS = HERE.parent / "results" / "server_throughput.json"
BARE = [sys.executable, str(HERE.parent / "service_throughput.py"), "--bare-server"]
NAMES = ("bare_pairs", "serve_pairs", "server_pairs", "server_many_pairs", "server_batch_trials")
TARGETS = {"server_to_bare": 0.8, "many_to_server": 0.7, "batch_trials_per_second": 20000}


def server_argv(directory: Path) -> list[str]:
    """``armlab server`` on a fresh SQLite storage in ``directory`` (admin token: :data:`TOKEN`)."""
    return armlab_argv("server", "--storage", f"sqlite:///{directory}/armlab.sqlite")


async def create_experiments(port: int, count: int, config: str) -> list[Target]:
    """Create ``count`` experiments over HTTP and open each (one ask+tell); their targets."""
    admin = Connection(*await asyncio.open_connection("127.0.0.1", port), TOKEN)
    targets = []
    for i in range(count):
        status, answer = await admin.post("/experiments", {"name": f"e{i}", "config": config})
        assert status == 201, answer
        targets.append((f"/experiments/e{i}", answer["token"]))
    admin.writer.close()
    await asyncio.gather(*(drive_pairs(port, 1, 1, [target]) for target in targets))
    return targets


def configurations(args: argparse.Namespace, directory: Path) -> dict:
    """name -> (argv, drive, prepare) of each configuration (:data:`NAMES`), files in ``directory``."""
    budget = 10 * (args.pairs + args.batch * args.batches) + 1000
    config = bench_config(budget, max(args.clients, args.batch * args.batch_clients))

    def on_server(count: int):
        return lambda port: create_experiments(port, count, config)

    def pairs(port: int, targets: list[Target] = SERVE):
        return drive_pairs(port, args.clients, args.pairs, targets)

    return {
        "bare_pairs": (BARE, pairs, None),
        "serve_pairs": (serve_argv(directory, budget, args.clients), pairs, None),
        "server_pairs": (server_argv(directory), pairs, on_server(1)),
        "server_many_pairs": (server_argv(directory),
                              lambda port, targets: drive_pairs(port, args.clients_each, args.pairs, targets),
                              on_server(args.experiments)),
        "server_batch_trials": (server_argv(directory),
                                lambda port, targets: drive_batches(port, args.batch_clients, args.batch,
                                                                    args.batches, targets),
                                on_server(1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4000, help="ask+tell pairs per pairs measurement")
    parser.add_argument("--clients", type=int, default=16, help="connections of the one-experiment runs")
    parser.add_argument("--experiments", type=int, default=50)
    parser.add_argument("--clients-each", type=int, default=4, help="connections per experiment of the many")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch-clients", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; each figure is its fastest")
    parser.add_argument("--only", nargs="*", help="measure only these configurations (and bare_pairs)")
    parser.add_argument("--profile", metavar="DIR", help="cProfile every armlab server and serve (DIR/NAME.prof)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    best: dict[str, dict] = {}
    rounds: list[dict[str, float]] = []
    for _ in range(args.rounds):
        seen = {}
        for name in NAMES:
            if args.only and name not in args.only and name != "bare_pairs":
                continue
            with tempfile.TemporaryDirectory() as tmp:
                argv, drive, prepare = configurations(args, Path(tmp))[name]
                if args.profile and name != "bare_pairs":
                    Path(args.profile).mkdir(parents=True, exist_ok=True)
                    argv = profiled(argv, str(Path(args.profile).resolve() / f"{name}.prof"))
                figure = measure(argv, drive, prepare)
            seen[name] = figure["per_second"]
            if name not in best or figure["per_second"] > best[name]["per_second"]:
                best[name] = figure
        rounds.append(seen)
    rate = {name: figure["per_second"] for name, figure in best.items()}
    ratios = {}
    if "server_pairs" in rate:
        ratios["server_to_bare"] = rate["server_pairs"] / rate["bare_pairs"]
    if "serve_pairs" in rate:
        ratios["serve_to_bare"] = rate["serve_pairs"] / rate["bare_pairs"]
    if "server_many_pairs" in rate and "server_pairs" in rate:
        ratios["many_to_server"] = rate["server_many_pairs"] / rate["server_pairs"]
    result = {
        "command": " ".join(["python", "benchmarks/server_throughput.py", *sys.argv[1:]]),
        "settings": {k: v for k, v in vars(args).items() if k not in ("only", "profile")},
        "figures": best, "rounds": rounds, "ratios": ratios, "targets": TARGETS,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "cpus": os.cpu_count(), "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    for name, figure in best.items():
        print(f"{name:20s} {figure['per_second']:9.0f}/s  server CPU {figure['server_cpu_ms_per_1000']:6.0f} ms "
              f"client CPU {figure['client_cpu_ms_per_1000']:5.0f} ms per 1000")
    print(json.dumps({"ratios": ratios, "load_average_before": load_before,
                      "load_average_after": result["load_average_after"]}, indent=2))


if __name__ == "__main__":
    main()
