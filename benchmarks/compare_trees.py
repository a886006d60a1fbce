"""Run-steps per second of built-in policies in two source trees, side by side.

Speed goals of the form "no policy more than 10 % slower than before" compare the code of two
commits.  Check the old commit out as a git worktree, then

    git worktree add ../armlab-before COMMIT
    python benchmarks/compare_trees.py ../armlab-before . --policies ucb1 sh --arms 100 --replicas 500

Each tree gets one long-lived worker process that imports armlab from ``TREE/src`` and times
with ``TREE/benchmarks/engine_speed.py`` (the same measurement: the warm-up untimed, then
``--steps`` timed steps).  The two workers take turns, policy by policy and repeat by repeat,
so drifts in the machine's speed fall on both trees alike; every figure is the fastest of
``--repeats`` runs.  Prints, and writes as JSON, the ratio after / before per policy.

With ``--budget N`` each run is instead a whole run of ``N`` trials per replica on Gaussian arms
(``engine_speed``'s means), timed in CPU seconds and given as run-steps per second;
``--variances`` sets the arms' reward variances, repeated over the arms in order (issue 35's
SHAdaVar instance: ``--arms 32 --replicas 500 --budget 5000 --variances 0.1,0.6``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import json, sys, time
sys.path[:0] = [sys.argv[1] + "/src", sys.argv[1] + "/benchmarks"]
import engine_speed
import numpy as np
from armlab.config import FeedbackConfig
from armlab.orchestrator import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Problem
try:
    from armlab.plugins.registry import default_registry
    registry = default_registry(False)
except ImportError:  # trees before default_registry
    from armlab.plugins.manager import get_plugin_manager
    from armlab.plugins.registry import Registry
    registry = Registry(get_plugin_manager(load_entrypoints=False))

def whole_run(cls, k, r, budget, variances):
    means = np.linspace(0.1, 0.9, k)[np.random.default_rng(k).permutation(k)]
    source = Gaussian({"means": means.tolist(), "variances": [variances[i % len(variances)] for i in range(k)]})
    ids = np.arange(r)
    source.reset(ids, 0)
    objective = next(o for o in engine_speed.PREFERENCE if o in cls.objectives)
    problem = Problem(objective=objective, budget=budget, n_arms=k, top_m=max(1, k // 10), threshold=0.5,
                      delta=0.05, truth=source.truth, source=source.name, reward_range=source.reward_range)
    simulation = Simulation(policy_factory=cls, sources=[source], problems=[problem], allocator=Single(),
                            feedback=FeedbackConfig(), seed=0, replicas=ids, checkpoints=[budget])
    start = time.process_time()
    while not simulation.finished:
        simulation.step()
    return r * budget / (time.process_time() - start)

for line in sys.stdin:
    name, k, r, steps, budget, variances = json.loads(line)
    try:
        cls = registry.get("policy", name)
        if budget:
            speed = whole_run(cls, k, r, budget, variances)
        else:
            speed = engine_speed.engine_speed(cls, k, r, steps)
    except Exception as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        continue
    print(json.dumps({"speed": speed}), flush=True)
"""


class Worker:
    """A process timing policies with the armlab of one tree."""

    def __init__(self, tree: Path) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(tree.resolve())], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)

    def speed(self, name: str, k: int, r: int, steps: int, budget: int | None, variances: list[float]) -> float | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps([name, k, r, steps, budget, variances]) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return answer.get("speed")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def _variances(text: str) -> list[float]:
    """``--variances``: comma-separated nonnegative numbers."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected comma-separated variances >= 0 such as 0.1,0.6, got {text!r}")
    return values


def builtin_policy_names() -> list[str]:
    from armlab.plugins.registry import default_registry

    return sorted(info.name for info in default_registry(False).infos("policy"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path, help="the tree measured first (e.g. a worktree of the old commit)")
    parser.add_argument("after", type=Path, help="the tree compared with it")
    parser.add_argument("--policies", nargs="*", help="policy names (default: every built-in policy of AFTER)")
    parser.add_argument("--arms", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=int, help="time whole runs of this many trials per replica (CPU time)")
    parser.add_argument("--variances", type=_variances, default=[0.25],
                        help="with --budget: the arms' reward variances, repeated over the arms (e.g. 0.1,0.6)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "compare_trees.json")
    args = parser.parse_args()
    names = args.policies or builtin_policy_names()
    before, after = Worker(args.before), Worker(args.after)
    rows = {}
    try:
        for name in names:
            best = {"before": 0.0, "after": 0.0}
            for _ in range(args.repeats):
                for key, worker in (("before", before), ("after", after)):
                    speed = worker.speed(name, args.arms, args.replicas, args.steps, args.budget, args.variances)
                    best[key] = max(best[key], speed or 0.0)
            ratio = best["after"] / best["before"] if best["before"] else None
            rows[name] = {**best, "ratio": ratio}
            shown = f"{ratio:.3f}" if ratio else "n/a"
            print(f"{name:20s} before {best['before']:12,.0f}  after {best['after']:12,.0f}  after/before {shown}", flush=True)
    finally:
        before.close()
        after.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "compare_trees", "arms": args.arms, "replicas": args.replicas, "steps": args.steps,
        "repeats": args.repeats, "budget": args.budget, "variances": args.variances if args.budget else None,
        "before": str(args.before), "after": str(args.after),
        "load_average": os.getloadavg(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
        "policies": rows,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
