"""Does ``--workers 2`` pay?  A six-policy regret study with one worker and with two, in turns.

The study: K = 10 Bernoulli arms (means 0.9 down to 0.45), budget 5000, R = 500 replicas,
policies ucb1, ucbv, moss, klucb, thompson and eucbv, run through
:func:`armlab.run_experiment` with ``ShardRunner(workers=1)`` and ``ShardRunner(workers=2)``
alternately, ``--repeats`` times each.  Every two-worker run starts its worker process
afresh (``spawn``), so its time includes that start-up.  Reports the fastest run of each,
their ratio (the goal on a two-core machine: at least 1.7), the seconds each policy took,
whether both gave the same numbers, and the load average before and after (the machine may
be shared).  Writes ``benchmarks/results/workers_speed.json``.

    python benchmarks/workers_speed.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from armlab import run_experiment
from armlab.config import ExperimentConfig, validate_config
from armlab.orchestrator.montecarlo.scale.heap import apply_heap_setting
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner

RESULTS = Path(__file__).resolve().parent / "results" / "workers_speed.json"
POLICIES = ["ucb1", "ucbv", "moss", "klucb", "thompson", "eucbv"]


def study(replicas: int, budget: int) -> ExperimentConfig:
    return validate_config({
        "name": "workers-speed", "seed": 21, "replicas": replicas, "checkpoint_every": budget // 10,
        "problem": {"objective": "regret", "budget": budget},
        "source": {"plugin": "bernoulli", "means": [round(0.9 - 0.05 * k, 2) for k in range(10)]},
        "policies": [{"plugin": name} for name in POLICIES],
    })


def timed(config: ExperimentConfig, workers: int) -> tuple[float, dict]:
    start = time.perf_counter()
    summary = run_experiment(config, scale=ShardRunner(workers=workers))
    return time.perf_counter() - start, summary


def numbers(summary: dict) -> dict:
    return {label: (p["regret_mean"], p["regret_stderr"]) for label, p in summary["policies"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs with each worker count (default 3)")
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--budget", type=int, default=5000)
    args = parser.parse_args()
    apply_heap_setting()  # as the armlab command does (its worker processes do it too)
    config = study(args.replicas, args.budget)
    load_before = os.getloadavg()
    times: dict[int, list[float]] = {1: [], 2: []}
    summaries = {}
    for repeat in range(args.repeats):
        for workers in (1, 2):
            seconds, summaries[workers] = timed(config, workers)
            times[workers].append(seconds)
            print(f"repeat {repeat + 1}, {workers} worker(s): {seconds:.2f} s", flush=True)
    one, two = min(times[1]), min(times[2])
    result = {
        "benchmark": "workers_speed",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "study": {"arms": 10, "source": "bernoulli", "replicas": args.replicas, "budget": args.budget,
                  "policies": POLICIES},
        "repeats": args.repeats,
        "seconds_1_worker": [round(s, 3) for s in times[1]],
        "seconds_2_workers": [round(s, 3) for s in times[2]],
        "fastest_1_worker": round(one, 3),
        "fastest_2_workers": round(two, 3),
        "ratio": round(one / two, 3),
        "policy_seconds": {label: round(p["wall_seconds"], 3) for label, p in summaries[1]["policies"].items()},
        "same_numbers": numbers(summaries[1]) == numbers(summaries[2]),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "python": platform.python_version(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"fastest: 1 worker {one:.2f} s, 2 workers {two:.2f} s, ratio {one / two:.2f}; same numbers: "
          f"{result['same_numbers']}; load {load_before[0]:.2f} -> {result['load_average_after'][0]:.2f}; "
          f"written {RESULTS}")


if __name__ == "__main__":
    main()
