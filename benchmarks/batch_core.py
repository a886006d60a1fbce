"""In-process server CPU of `/ask/batch` + `/tell/batch` on `armlab server`, this tree against another (not a test).

One experiment of ``armlab server``'s own code (SQLite storage in a temporary folder, the
benchmark's UCB1 on 4 arms, the :class:`~armlab.service.server_experiments.Experiments` that
open it, its group commit and commit thread) is driven without HTTP: ``--clients`` tasks
each ask a batch of ``--batch`` trials and tell it, the bodies given as bytes to the
experiment's :class:`~armlab.service.hot_routes.HotRoutes` (JSON decoding, body models, the
service, the answer's JSON), as the server's entry point does after reading a request.  The
server's CPU per 1000 trials is the process's CPU time (every thread: the event loop and the
journal's commit thread) less the clients' own work (building bodies, reading answers),
timed apart; the loop thread's share is reported beside it.  The garbage collector is set
up as the server sets it up (:mod:`armlab.service.collector`, in a tree that has it).  Each
tree runs in its own child process (``PYTHONPATH=TREE/src``); runs alternate between the
trees and the fastest of ``--repeats`` counts, so drift of a shared machine hits both alike.

    git worktree add /tmp/before <commit>
    python benchmarks/batch_core.py [--baseline /tmp/before] [--batches 40] [--repeats 5]
    python benchmarks/batch_core.py --profile FILE   # cProfile (CPU time) of this tree's loop thread

Writes benchmarks/results/batch_core.json with ``--baseline``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
RESULTS = HERE.parent / "results" / "batch_core.json"
sys.path.insert(0, str(HERE.parent))

from asktell_core import alternate  # noqa: E402  (a sibling script)


def child(batch: int, batches: int, clients: int, profile: str | None) -> dict[str, float]:
    """Drive the batches with whichever armlab is importable; return CPU ms per 1000 trials."""
    import logging

    import anyio
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    from service_throughput import bench_config

    from armlab.plugins.manager import get_plugin_manager
    from armlab.plugins.registry import Registry
    from armlab.service.server_experiments import Experiments
    from armlab.storage import open_storage

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    client_cpu = 0.0

    def client(work, *args):
        nonlocal client_cpu
        start = time.thread_time()
        try:
            return work(*args)
        finally:
            client_cpu += time.thread_time() - start

    def tell_body(answer: bytes) -> bytes:
        trials = json.loads(answer)["trials"]
        return json.dumps({"reports": [{"trial_id": t["trial_id"], "reward": float(t["arm"] == 1)}
                                       for t in trials]}).encode()

    def check(answer: bytes) -> int:
        results = json.loads(answer)["results"]
        assert all(r["status"] == "accepted" for r in results), results[:3]
        return len(results)

    async def drive(tmp: str) -> dict[str, float]:
        try:  # as the server sets the collector up before it runs (a tree that has it)
            from armlab.service.collector import serving_collector
        except ImportError:
            pass
        else:
            serving_collector()
        storage = open_storage(f"sqlite:///{tmp}/armlab.sqlite", None)
        experiments = Experiments(storage, Registry(get_plugin_manager(load_entrypoints=False)))
        experiments.create("e0", bench_config(10 * batch * batches * clients + 1000, batch * clients))
        async with experiments.running(), experiments.use("e0") as loaded:
            app = loaded.app
            ask, tell = app.routes["/ask/batch"], app.routes["/tell/batch"]
            ask_body = json.dumps({"count": batch}).encode()
            started, done = 0, 0

            async def one_client() -> None:
                nonlocal started, done
                while started < batches:
                    started += 1
                    answer = await app.answer(scope, ask, ask_body)
                    told = await app.answer(scope, tell, client(tell_body, answer))
                    done += client(check, told)

            await app.answer(scope, tell, client(tell_body, await app.answer(scope, ask, ask_body)))  # warm up
            profiler = None
            if profile:
                import cProfile

                profiler = cProfile.Profile(time.thread_time)
                profiler.enable()
            cpu, loop_cpu, wall = time.process_time(), time.thread_time(), time.perf_counter()
            before = client_cpu
            async with anyio.create_task_group() as tg:
                for _ in range(clients):
                    tg.start_soon(one_client)
            await loaded.service.durable()
            ours = client_cpu - before
            figures = {"server_ms": (time.process_time() - cpu - ours) * 1e6 / done,
                       "loop_ms": (time.thread_time() - loop_cpu - ours) * 1e6 / done,
                       "trials_per_second_wall": done / (time.perf_counter() - wall)}
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(profile)
        storage.close()
        return figures

    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(drive, tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="the other tree (e.g. a git worktree of the old commit)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", metavar="FILE", help="cProfile this tree's loop thread (one run) to FILE")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child or args.profile:
        print(json.dumps(child(args.batch, args.batches, args.clients, args.profile)))
        return
    trees = {"this": HERE.parents[1], **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    load_before = os.getloadavg()
    argv = ["--batch", str(args.batch), "--batches", str(args.batches), "--clients", str(args.clients)]
    runs = alternate(HERE, trees, args.repeats, argv)
    best = {name: {"server_ms": min(r["server_ms"] for r in rs), "loop_ms": min(r["loop_ms"] for r in rs)}
            for name, rs in runs.items()}
    result = {
        "command": " ".join(["python", "benchmarks/batch_core.py", *sys.argv[1:]]),
        "batch": args.batch, "batches": args.batches, "clients": args.clients, "repeats": args.repeats,
        "cpu_ms_per_1000_trials": best,
        "runs": runs,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "python": platform.python_version(), "machine": platform.machine(), "date": time.strftime("%Y-%m-%d"),
    }
    if "baseline" in best:
        result["ratio_this_to_baseline"] = {key: best["this"][key] / best["baseline"][key]
                                            for key in ("server_ms", "loop_ms")}
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("cpu_ms_per_1000_trials", "ratio_this_to_baseline", "load_average_before")
                      if k in result}, indent=2))


if __name__ == "__main__":
    main()
