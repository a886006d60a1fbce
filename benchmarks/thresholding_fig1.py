"""The thresholding paper's Fig. 1 end to end: experiments 1-6 as shipped (500 runs, T = 10000, all methods).

Runs each ``examples/thresholding/expN.toml`` through :func:`armlab.run_experiment` with its
replicas split over ``--workers`` local processes (the same numbers as one process), and
reports the wall time per experiment and in total, the CPU time of this process and its
workers, and the load average before and after (the machine may be shared).  With
``--baseline`` it first runs experiment 1 in one process, for the speed-up of sharding
measured in the same process.  Writes ``benchmarks/results/thresholding_fig1.json``.

    python benchmarks/thresholding_fig1.py --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

from armlab import run_experiment
from armlab.log import configure_logging
from armlab.orchestrator.montecarlo.scale.heap import reserve_heap_headroom
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "thresholding"
RESULTS = Path(__file__).resolve().parent / "results" / "thresholding_fig1.json"


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(config: Path, scale: ShardRunner | None) -> dict:
    cpu, start = cpu_seconds(), time.perf_counter()
    summary = run_experiment(config, scale=scale)
    return {
        "experiment": config.stem,
        "wall_seconds": round(time.perf_counter() - start, 2),
        "cpu_seconds": round(cpu_seconds() - cpu, 2),
        "final_error": {label: entry["error_rate"][-1] for label, entry in summary["policies"].items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="local worker processes (default 2)")
    parser.add_argument("--baseline", action="store_true", help="also time experiment 1 in one process")
    args = parser.parse_args()
    configure_logging(level="warning")
    reserve_heap_headroom()  # as the armlab command does, so the figures stay comparable
    load_before = os.getloadavg()
    baseline = timed(EXAMPLES / "exp1.toml", None) if args.baseline else None
    scale = ShardRunner(args.workers, "local", None, None) if args.workers > 1 else None
    runs, start = [], time.perf_counter()
    for n in range(1, 7):
        runs.append(timed(EXAMPLES / f"exp{n}.toml", scale))
        print(f"{runs[-1]['experiment']}: {runs[-1]['wall_seconds']:.1f} s wall, {runs[-1]['cpu_seconds']:.1f} s CPU")
    total = time.perf_counter() - start
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "workers": args.workers,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "total_wall_seconds": round(total, 1),
        "total_cpu_seconds": round(sum(r["cpu_seconds"] for r in runs), 1),
        "experiments": runs,
    }
    if baseline is not None:
        result["exp1_one_process"] = baseline
        result["exp1_speedup_of_sharding"] = round(baseline["wall_seconds"] / runs[0]["wall_seconds"], 2)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"Fig. 1 (6 experiments, {args.workers} workers): {total:.1f} s wall, "
          f"{result['total_cpu_seconds']:.1f} s CPU; load before {load_before[0]:.2f}; written {RESULTS}")


if __name__ == "__main__":
    main()
