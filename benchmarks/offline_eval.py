"""Offline evaluation of one policy over a log of a million trials (issue 33: under 30 s).

The log is synthetic (uniform logging over ten Bernoulli arms, propensity 1/10 each, the
shape of a floored uniform live run); it is built in memory, not timed, and every estimator
is computed for the policy, as ``armlab evaluate`` does.  Prints wall and CPU seconds with
the load average, and writes them to ``results/offline_eval.json``.

    python benchmarks/offline_eval.py [--trials 1000000] [--policy ucb1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from armlab.decisionlog.evaluate import Candidate, LoggedTrials, evaluate_candidate
from armlab.plugins.registry import default_registry
from armlab.problem import Objective, Problem


def synthetic_log(trials: int, n_arms: int = 10, seed: int = 0) -> LoggedTrials:
    rng = np.random.default_rng(seed)
    means = np.linspace(0.1, 0.6, n_arms)
    arms = rng.integers(0, n_arms, trials)
    rewards = (rng.random(trials) < means[arms]).astype(float)
    problem = Problem(objective=Objective.REGRET, budget=trials, n_arms=n_arms, reward_range=(0.0, 1.0))
    return LoggedTrials(arms, rewards, np.full(trials, 1.0 / n_arms), False, problem, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--policy", default="ucb1")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    log = synthetic_log(args.trials)
    registry = default_registry(False)
    walls, cpus = [], []
    for _ in range(args.repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        estimates = evaluate_candidate(Candidate(args.policy), log, registry)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    load = os.getloadavg()
    result = {"trials": args.trials, "policy": args.policy, "wall_s_fastest": min(walls), "cpu_s_fastest": min(cpus),
              "wall_s": walls, "load_average": load,
              "estimates": {e.estimator: e.estimate for e in estimates}}
    print(f"{args.policy} over {args.trials} logged trials: {min(walls):.2f} s wall, {min(cpus):.2f} s CPU "
          f"(fastest of {args.repeats}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    out = Path(__file__).parent / "results" / "offline_eval.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
