"""Run-steps per second of every built-in policy, against two baselines in the same process.

For each policy and each size (K arms, R replicas) the engine is advanced through a warm-up
of ``K`` steps (every arm seen once; not timed when ``K * R`` is small enough), then
``--skip`` untimed steps (0 by default; to time a window later in the run), and then timed
over ``--steps`` steps; with ``--repeats N`` every figure is the fastest of N such runs (as
``timeit`` does: slower repeats measure the other processes on the machine).  Each policy's
runs alternate with runs of ``ucb1``, and its ratio is against those: the speed of a shared
machine drifts between cells more than it does between two runs in a row.  A run-step is
one trial of one replica.  Baselines, same process:

* ``python-loop``: UCB1 as a per-run Python step loop with numpy over the arms;
* ``numba``: UCB1 compiled with numba, recomputing every index at every step (the usual
  compiled reference; needs ``pip install 'armlab[bench]'``).

Also reports the peak memory (RSS) of the largest setting, measured in a fresh subprocess.
Writes ``benchmarks/results/engine_speed.json`` and prints ratios against ``ucb1``.

    python benchmarks/engine_speed.py --arms 10 100 1000 --replicas 1 100 1000 5000
    python benchmarks/engine_speed.py --arms 100 --replicas 500 --policies ucb1 sh --threads 1 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from armlab.config import FeedbackConfig
from armlab.errors import ConfigError
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.scale.heap import reserve_heap_headroom
from armlab.plugins.allocators.single import Single
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem

PREFERENCE = (Objective.REGRET, Objective.BEST_ARM, Objective.TOP_M, Objective.THRESHOLD)


def instance(k: int, bernoulli: bool):
    means = np.linspace(0.1, 0.9, k)[np.random.default_rng(k).permutation(k)]
    if bernoulli:
        return Bernoulli({"means": means.tolist()})
    return Gaussian({"means": means.tolist(), "variances": 0.25})


def build(policy_cls, k: int, r: int, budget: int) -> Simulation:
    reserve_heap_headroom()  # as the armlab command does, so the figures stay comparable
    objective = next(o for o in PREFERENCE if o in policy_cls.objectives)
    for bernoulli in (False, True):
        source = instance(k, bernoulli)
        ids = np.arange(r)
        source.reset(ids, 0)
        problem = Problem(objective=objective, budget=budget, n_arms=k, top_m=max(1, k // 10),
                          threshold=0.5, delta=0.05, truth=source.truth, source=source.name,
                          reward_range=source.reward_range)
        try:
            return Simulation(policy_factory=policy_cls, sources=[source], problems=[problem], allocator=Single(),
                              feedback=FeedbackConfig(), seed=0, replicas=ids, checkpoints=[budget])
        except ConfigError:
            if bernoulli:
                raise
    raise AssertionError("unreachable")


def budget_for(k: int, skip: int, steps: int) -> int:
    """A budget that no policy exhausts before the timed window ends."""
    return max(20 * k * max(1, math.ceil(math.log2(k))), k + skip + steps + 1)


def engine_speed(policy_cls, k: int, r: int, steps: int, skip: int = 0) -> float | None:
    try:
        sim = build(policy_cls, k, r, budget_for(k, skip, steps))
    except ConfigError as exc:
        print(f"  skip {policy_cls.name} K={k}: {exc}", file=sys.stderr)
        return None
    if k * r <= 2_000_000:
        for _ in range(k + skip):  # warm-up: every arm seen once, then ``skip`` more steps
            sim.step()
    start = time.perf_counter()
    done = 0
    while done < steps and not sim.finished:
        sim.step()
        done += 1
    elapsed = time.perf_counter() - start
    return r * done / elapsed if done else None


def python_loop_speed(k: int, steps: int) -> float:
    means = np.linspace(0.1, 0.9, k)
    rng = np.random.default_rng(0)
    counts, sums = np.ones(k), means + rng.standard_normal(k)
    start = time.perf_counter()
    for t in range(k, k + steps):
        arm = int(np.argmax(sums / counts + np.sqrt(2.0 * np.log(t) / counts)))
        counts[arm] += 1
        sums[arm] += means[arm] + 0.5 * rng.standard_normal()
    return steps / (time.perf_counter() - start)


def numba_speed(k: int, r: int, steps: int) -> float | None:
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(cache=False)
    def ucb1_loop(means, replicas, steps, seed):
        np.random.seed(seed)
        k = means.size
        total = 0.0
        for _ in range(replicas):
            counts = np.ones(k)
            sums = means + 0.5 * np.random.standard_normal(k)
            for t in range(k, k + steps):
                best, best_value = 0, -1e300
                log_t = np.log(t)
                for i in range(k):  # recompute every index, every step
                    value = sums[i] / counts[i] + np.sqrt(2.0 * log_t / counts[i])
                    if value > best_value:
                        best, best_value = i, value
                counts[best] += 1.0
                sums[best] += means[best] + 0.5 * np.random.standard_normal()
            total += sums.sum()
        return total

    means = np.linspace(0.1, 0.9, k)
    ucb1_loop(means, 1, 10, 0)  # compile
    start = time.perf_counter()
    ucb1_loop(means, r, steps, 1)
    return r * steps / (time.perf_counter() - start)


def fastest(repeats: int, *measures: Callable[[], float | None]) -> list[float | None]:
    """The largest speed of each zero-argument ``measure`` over ``repeats`` rounds (None if
    never measured); within a round the measures run one after the other, so a policy and
    its baseline see the same machine."""
    speeds: list[list[float]] = [[] for _ in measures]
    for _ in range(repeats):
        for got, measure in zip(speeds, measures, strict=True):
            speed = measure()
            if speed:
                got.append(speed)
    return [max(got) if got else None for got in speeds]


def peak_memory_mb(k: int, r: int, policy: str, steps: int) -> float:
    """Peak RSS of a fresh interpreter that builds and runs the largest setting."""
    code = (
        "import sys, resource; sys.path.insert(0, %r)\n"
        "from engine_speed import build, engine_speed\n"
        "from armlab.plugins.manager import get_plugin_manager\n"
        "from armlab.plugins.registry import Registry\n"
        "cls = Registry(get_plugin_manager(load_entrypoints=False)).get('policy', %r)\n"
        "engine_speed(cls, %d, %d, %d)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    ) % (str(Path(__file__).parent), policy, k, r, steps)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 100, 1000, 5000])
    parser.add_argument("--policies", nargs="*", help="policy names (default: all built-ins)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per cell")
    parser.add_argument("--skip", type=int, default=0,
                        help="untimed steps after the warm-up: time a window later in the run")
    parser.add_argument("--repeats", type=int, default=1, help="report the fastest of this many runs")
    parser.add_argument("--threads", type=int, help="set OMP/BLAS threads (1 = one core)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "engine_speed.json"))
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    registry = Registry(get_plugin_manager(load_entrypoints=False))
    names = args.policies or registry.names("policy")
    cells = []
    for k in args.arms:
        for r in args.replicas:
            ucb1 = partial(engine_speed, registry.get("policy", "ucb1"), k, r, args.steps, args.skip)
            baseline, loop, compiled = fastest(
                args.repeats, ucb1, partial(python_loop_speed, k, args.steps), partial(numba_speed, k, r, args.steps))
            row = {"arms": k, "replicas": r, "ucb1": baseline, "python_loop": loop, "numba": compiled,
                   "ratio_to_ucb1": {}}
            for name in names:
                policy = registry.get("policy", name)
                speed, paired = (baseline, baseline) if name == "ucb1" else fastest(
                    args.repeats, partial(engine_speed, policy, k, r, args.steps, args.skip), ucb1)
                row[name] = speed
                row["ratio_to_ucb1"][name] = speed / paired if speed and paired else None
                ratio = f"{speed / paired:6.2f}x ucb1" if speed and paired else "   -"
                print(f"K={k:<5} R={r:<5} {name:<20} {speed or 0:>14,.0f} run-steps/s  {ratio}", flush=True)
            numba_value = row["numba"]
            print(f"K={k:<5} R={r:<5} {'python-loop':<20} {row['python_loop']:>14,.0f} run-steps/s  "
                  f"(ucb1 is {baseline / row['python_loop']:.0f}x)")
            if numba_value:
                print(f"K={k:<5} R={r:<5} {'numba':<20} {numba_value:>14,.0f} run-steps/s  "
                      f"(ucb1 is {baseline / numba_value:.2f}x)")
            cells.append(row)
    k, r = max(args.arms), max(args.replicas)
    memory = peak_memory_mb(k, r, "ucb1", min(args.steps, 50))
    print(f"peak RSS at K={k}, R={r} (ucb1): {memory:,.0f} MB")
    result = {"benchmark": "engine_speed", "steps": args.steps, "skip": args.skip, "repeats": args.repeats,
              "load_average": os.getloadavg(), "cells": cells,
              "peak_rss_mb": {"arms": k, "replicas": r, "policy": "ucb1", "value": memory},
              "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
              "cpu_count": os.cpu_count(), "maxrss_parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
