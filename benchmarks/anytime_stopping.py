"""Anytime stopping (docs/safeguards.md) against LUCB1 on the same problems, 500 seeded runs.

The anytime rule runs beside an elimination-style sampler (armlab.testing.safeguards); LUCB1
runs with its own sampling and stopping in the Monte Carlo engine.  Both at delta = 0.05 on
Bernoulli arms: a close two-arm problem and a ten-arm one.  Prints and writes
``results/anytime_stopping.json``: error rate, share stopped, mean and 95th-percentile
stopping time (trials), and the ratio of the mean stopping times.

    python benchmarks/anytime_stopping.py [--runs 500]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from armlab.plugins.fixed_confidence.lucb1 import LUCB1
from armlab.plugins.sources.simulated import Bernoulli
from armlab.testing import simulate_policy
from armlab.testing.safeguards import anytime_stopping_runs

PROBLEMS = {
    "close-two": ([0.5, 0.4], 60000),
    "ten": ([0.7, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2], 100000),
}
DELTA = 0.05


def summarize(stopped_at: np.ndarray, recommended: np.ndarray, best: int) -> dict:
    stopped = stopped_at >= 0
    times = stopped_at[stopped]
    return {
        "error_rate": float((recommended[stopped] != best).mean()),
        "stopped": float(stopped.mean()),
        "mean_stopping_time": float(times.mean()),
        "p95_stopping_time": float(np.percentile(times, 95)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    results = {"runs": args.runs, "delta": DELTA, "load_average": os.getloadavg()[0], "problems": {}}
    for name, (means, budget) in PROBLEMS.items():
        best = int(np.argmax(means))
        anytime = summarize(*anytime_stopping_runs(means, delta=DELTA, runs=args.runs, budget=budget, seed=32), best)
        sim = simulate_policy(LUCB1, Bernoulli({"means": means}), budget=budget, replicas=args.runs, delta=DELTA)
        lucb = summarize(sim.stopped_at, sim.policies[0].recommend(sim.stats[0]), best)
        ratio = anytime["mean_stopping_time"] / lucb["mean_stopping_time"]
        results["problems"][name] = {"means": means, "anytime": anytime, "lucb1": lucb, "mean_time_ratio": ratio}
        print(f"{name}: anytime {anytime}\n  lucb1 {lucb}\n  mean stopping time anytime / lucb1 = {ratio:.3f}")
    out = Path(__file__).parent / "results" / "anytime_stopping.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
