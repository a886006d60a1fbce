"""Do worker processes and Dask pay?  Four studies, one worker against two, in turns.

Studies (issue 34's targets in brackets):

* ``six``: a six-policy regret study (ucb1, moss, klucb, thompson, bayes-ucb, ucbv; K = 16
  Bernoulli arms, R = 500, budget 8000): ``--workers 2`` against 1 [1.75x], and a local Dask
  cluster of two processes against one process [1.6x];
* ``six-k10``: the other six-policy regret study (ucb1, ucbv, moss, klucb, thompson, eucbv;
  K = 10 Bernoulli arms, means 0.9 down to 0.45, R = 500, budget 5000: the study of the
  one-engine issue's closing note, 1.64x then): ``--workers 2`` against 1 [1.75x], and Dask
  as for ``six`` [1.6x];
* ``exp1``: ``examples/thresholding/exp1.toml`` as shipped, ``--workers 2`` against 1 [1.5x];
* ``sweep``: 200 configurations (error vs K x gap: K = 2..21 Bernoulli arms, ten gaps
  between the best arm and the rest; ucb1, sr, sh, uniform; R = 200, budget 1000),
  ``--workers 2`` against 1 [1.7x], with the peak memory of the main process [under 1 GiB].

Every timed run is a fresh ``python`` process running :func:`armlab.run_experiment` (so its
worker start-up counts, and ``resource.getrusage`` gives that main process's own peak memory,
workers excluded; the CPU time of the process and its workers, a figure the machine's load
barely moves, shows what the workers' start-up costs); one and two workers alternate, ``--repeats`` times, and the fastest of
each is kept.  ``--scale`` multiplies every study's replicas (``0.1`` for a quick look; the
targets are for ``1``).  Also recorded: whether both counts gave the same numbers, and the
load average before and after (the machine may be shared).  Writes
``benchmarks/results/workers_speed.json`` (or ``--out``).

    python benchmarks/workers_speed.py                     # everything, full scale
    python benchmarks/workers_speed.py --scale 0.1 --repeats 1 --studies six sweep
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "workers_speed.json"
SIX = ["ucb1", "moss", "klucb", "thompson", "bayes-ucb", "ucbv"]
SIX_K10 = ["ucb1", "ucbv", "moss", "klucb", "thompson", "eucbv"]
SWEEP_POLICIES = ["ucb1", "sr", "sh", "uniform"]
STUDIES = ["six", "six-k10", "exp1", "sweep"]
TARGETS = {("six", "local"): 1.75, ("six", "dask"): 1.6, ("six-k10", "local"): 1.75, ("six-k10", "dask"): 1.6,
           ("exp1", "local"): 1.5, ("sweep", "local"): 1.7}


def config(study: str) -> tuple[Any, int]:
    """The config of ``study`` (its tables, or the path of a shipped TOML) and its replicas."""
    if study == "exp1":
        return REPO / "examples/thresholding/exp1.toml", 500
    if study == "six":
        return {"name": "six-policies", "seed": 21, "checkpoint_every": 800,
                "problem": {"objective": "regret", "budget": 8000},
                "source": {"plugin": "bernoulli", "means": [round(0.9 - 0.03 * k, 2) for k in range(16)]},
                "policies": [{"plugin": name} for name in SIX]}, 500
    if study == "six-k10":
        return {"name": "workers-speed", "seed": 21, "checkpoint_every": 500,
                "problem": {"objective": "regret", "budget": 5000},
                "source": {"plugin": "bernoulli", "means": [round(0.9 - 0.05 * k, 2) for k in range(10)]},
                "policies": [{"plugin": name} for name in SIX_K10]}, 500
    # 200 configurations: K = 2..21 arms x 10 gaps between the best arm and the rest
    means = [[round(0.5 + 0.02 * gap, 2)] + [round(0.5 - 0.01 * a, 2) for a in range(k - 1)]
             for k in range(2, 22) for gap in range(1, 11)]
    return {"name": "sweep-200", "seed": 3, "checkpoints": [500, 1000],
            "problem": {"objective": "best-arm", "budget": 1000},
            "source": {"plugin": "bernoulli", "means": means[0]},
            "policies": [{"plugin": name} for name in SWEEP_POLICIES],
            "sweep": {"parameter": "source.means", "values": means}}, 200


def one_run(study: str, scale: float, workers: int, executor: str) -> dict[str, Any]:
    """Run ``study`` once in this process (the child of :func:`timed`)."""
    from armlab import run_experiment
    from armlab.orchestrator.montecarlo.scale.heap import apply_heap_setting
    from armlab.orchestrator.montecarlo.scale.shards import ShardRunner

    apply_heap_setting()  # as the armlab command does (its worker processes do it too)
    data, replicas = config(study)
    started = time.perf_counter()
    summary = run_experiment(data, replicas=max(1, round(replicas * scale)),
                             scale=ShardRunner(workers=workers, executor=executor))
    seconds = time.perf_counter() - started
    key = "regret_mean" if summary["objective"] == "regret" else "error_rate"
    return {"seconds": seconds, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "cpu_seconds": cpu_seconds(),
            "numbers": {label: p[key] for label, p in summary["policies"].items()}}


def cpu_seconds() -> float:
    """CPU seconds of this process (its import of armlab included) and of every worker it
    started: those it has reaped, and a fork server still running (Dask's local cluster),
    which has reaped the workers it forked."""
    used = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    try:
        import psutil  # installed with Dask
    except ImportError:  # no Dask: only local workers, reaped by now
        return used
    return used + sum(sum(child.cpu_times()[:4]) for child in psutil.Process().children(recursive=True))


def timed(study: str, scale: float, workers: int, executor: str) -> dict[str, Any]:
    """:func:`one_run` in a fresh interpreter."""
    argv = [sys.executable, __file__, "--child", study, str(scale), str(workers), executor]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.splitlines()[-1])


def compare(study: str, executor: str, scale: float, repeats: int) -> dict[str, Any]:
    """One worker (one process, local) against two (local workers, or a Dask cluster of two)."""
    runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    for repeat in range(repeats):
        for workers in (1, 2):
            run = timed(study, scale, workers, "local" if workers == 1 else executor)
            runs[workers].append(run)
            print(f"{study} {executor} repeat {repeat + 1}, {workers}: {run['seconds']:.2f} s, "
                  f"CPU {run['cpu_seconds']:.2f} s, peak {run['peak_rss_mib']:.0f} MiB, load {os.getloadavg()[0]:.2f}", flush=True)
    one, two = (min(r["seconds"] for r in runs[w]) for w in (1, 2))
    return {"study": study, "executor": executor, "target": TARGETS[study, executor],
            "seconds_1": [round(r["seconds"], 3) for r in runs[1]],
            "seconds_2": [round(r["seconds"], 3) for r in runs[2]],
            "ratio": round(one / two, 3),
            "cpu_seconds_1": min(round(r["cpu_seconds"], 3) for r in runs[1]),
            "cpu_seconds_2": min(round(r["cpu_seconds"], 3) for r in runs[2]),
            "peak_rss_mib_1": round(max(r["peak_rss_mib"] for r in runs[1]), 1),
            "peak_rss_mib_2": round(max(r["peak_rss_mib"] for r in runs[2]), 1),
            "same_numbers": all(r["numbers"] == runs[1][0]["numbers"] for r in runs[1] + runs[2])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="runs of each worker count (default 2)")
    parser.add_argument("--scale", type=float, default=1.0, help="factor on every study's replicas (default 1)")
    parser.add_argument("--studies", nargs="+", default=STUDIES, choices=STUDIES)
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask comparison")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        study, scale, workers, executor = args.child
        print(json.dumps(one_run(study, float(scale), int(workers), executor)))
        return
    load_before = os.getloadavg()
    cases = [(study, "local") for study in args.studies]
    cases += [(study, "dask") for study in args.studies if (study, "dask") in TARGETS and not args.no_dask]
    results = [compare(study, executor, args.scale, args.repeats) for study, executor in cases]
    report = {
        "benchmark": "workers_speed",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "scale": args.scale, "repeats": args.repeats, "results": results,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "python": platform.python_version(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for r in results:
        print(f"{r['study']:7s} {r['executor']:5s} ratio {r['ratio']:.2f} (target {r['target']}), "
              f"CPU {r['cpu_seconds_1']:.2f} -> {r['cpu_seconds_2']:.2f} s, "
              f"main-process peak {r['peak_rss_mib_2']:.0f} MiB with 2, same numbers {r['same_numbers']}")
    print(f"load {load_before[0]:.2f} -> {report['load_average_after'][0]:.2f}; written {args.out}")


if __name__ == "__main__":
    main()
