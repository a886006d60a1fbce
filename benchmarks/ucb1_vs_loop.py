"""Run-steps per second of armlab's vectorized UCB1 against a plain per-run numpy loop.

Both run in this process on the same Gaussian bandit (K arms, variance 1): armlab advances
R replicas together through its engine; the baseline runs the replicas one after another, a
Python step loop with numpy over the K arms (the way a bandit paper's script is usually
written).  Prints the figures and writes them to benchmarks/results/ucb1_vs_loop.json.

    python benchmarks/ucb1_vs_loop.py [--arms 100] [--replicas 500] [--horizon 2000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from armlab.config import FeedbackConfig
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.scale.heap import reserve_heap_headroom
from armlab.plugins.allocators.single import Single
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Objective, Problem


def armlab_steps_per_second(means: np.ndarray, replicas: int, horizon: int) -> float:
    source = Gaussian({"means": means.tolist(), "variances": 1.0})
    ids = np.arange(replicas)
    source.reset(ids, 0)
    problem = Problem(objective=Objective.REGRET, budget=horizon, n_arms=means.size, truth=source.truth)
    sim = Simulation(policy_factory=UCB1, sources=[source], problems=[problem], allocator=Single(),
                     feedback=FeedbackConfig(), seed=0, replicas=ids, checkpoints=[horizon])
    start = time.perf_counter()
    while not sim.finished:
        sim.step()
    return replicas * horizon / (time.perf_counter() - start)


def loop_steps_per_second(means: np.ndarray, replicas: int, horizon: int) -> float:
    k = means.size
    start = time.perf_counter()
    for r in range(replicas):
        rng = np.random.default_rng(r)
        counts, sums = np.zeros(k), np.zeros(k)
        for t in range(horizon):
            if t < k:
                arm = t
            else:
                arm = int(np.argmax(sums / counts + np.sqrt(2.0 * np.log(t) / counts)))
            counts[arm] += 1
            sums[arm] += means[arm] + rng.standard_normal()
    return replicas * horizon / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--loop-replicas", type=int, default=5, help="replicas timed for the slow baseline")
    args = parser.parse_args()
    reserve_heap_headroom()  # as the armlab command does, so the figures stay comparable
    means = np.linspace(0.0, 1.0, args.arms)
    vectorized = armlab_steps_per_second(means, args.replicas, args.horizon)
    loop = loop_steps_per_second(means, args.loop_replicas, args.horizon)
    result = {
        "benchmark": "ucb1_vs_loop",
        "arms": args.arms,
        "replicas": args.replicas,
        "horizon": args.horizon,
        "armlab_run_steps_per_second": vectorized,
        "numpy_loop_run_steps_per_second": loop,
        "speedup": vectorized / loop,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
    }
    out = Path(__file__).parent / "results" / "ucb1_vs_loop.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"armlab ucb1 (K={args.arms}, R={args.replicas}): {vectorized:,.0f} run-steps/s")
    print(f"plain numpy loop:                 {loop:,.0f} run-steps/s")
    print(f"ratio: {vectorized / loop:.1f}x   ({out})")


if __name__ == "__main__":
    main()
