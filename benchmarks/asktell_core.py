"""In-process ask+tell rate of the live core, this tree against another (not a test).

The live state machine (``LiveSession.experiment``: UCB1, 4 arms, an ``external`` source,
no journal, logging off) is driven by the loop of ``live_throughput.py``: ask until the
in-flight slots are full, tell the oldest pending trial, repeat.  Each tree runs in its own
child process (``PYTHONPATH=TREE/src``); runs alternate between the trees and the fastest of
``--repeats`` counts, so drift of a shared machine hits both alike.

    git worktree add /tmp/before <commit>
    python benchmarks/asktell_core.py --baseline /tmp/before [--trials 20000] [--repeats 5]

Writes benchmarks/results/asktell_core.json: trials per second (wall and CPU) of each tree
and their ratio, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
RESULTS = HERE.parent / "results" / "asktell_core.json"


def child(trials: int, in_flight: int) -> dict[str, float]:
    """Run the loop with whichever armlab is importable; return its rates."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    from armlab.config import validate_config
    from armlab.orchestrator.live.session import LiveSession
    from armlab.plan import build_plan
    from armlab.plugins.manager import get_plugin_manager
    from armlab.plugins.registry import Registry

    cfg = validate_config({
        "name": "bench", "seed": 1, "problem": {"objective": "best-arm", "budget": trials},
        "source": {"plugin": "external", "arms": 4, "reward_min": 0, "reward_max": 1},
        "feedback": {"in_flight": in_flight}, "policies": [{"plugin": "ucb1"}],
    })
    exp = LiveSession.from_plan(build_plan(cfg, Registry(get_plugin_manager(load_entrypoints=False)))).experiment

    def reward(trial) -> float:
        return float((trial.arm * 7919 + trial.pull * 104729) % 10 < 3 + trial.arm)

    pending: list = []
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(trials):
        if len(pending) == in_flight:
            oldest = pending.pop(0)
            exp.tell(oldest.id, reward(oldest))
        pending.append(exp.ask())
    for trial in pending:
        exp.tell(trial.id, reward(trial))
    return {"wall": trials / (time.perf_counter() - start), "cpu": trials / (time.process_time() - cpu)}


def child_in_tree(script: Path, tree: Path, argv: list[str]) -> dict[str, float]:
    """The JSON of the last line that ``script --child ARGV`` prints, run with ``tree``'s armlab
    (its ``src`` on the path)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, str(script), "--child", *argv], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def alternate(script: Path, trees: dict[str, Path], repeats: int, argv: list[str]) -> dict[str, list[dict[str, float]]]:
    """:func:`child_in_tree` for each of ``trees`` in turns, ``repeats`` times each (a drift of
    the machine's speed falls on every tree alike): each tree's runs."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(repeats):
        for name, tree in trees.items():
            runs[name].append(child_in_tree(script, tree, argv))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="the other tree (e.g. a git worktree of the old commit)")
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.trials, args.in_flight)))
        return
    if args.baseline is None:
        parser.error("--baseline TREE is required")
    trees = {"this": HERE.parents[1], "baseline": args.baseline.resolve()}
    load_before = os.getloadavg()
    runs = alternate(HERE, trees, args.repeats, ["--trials", str(args.trials), "--in-flight", str(args.in_flight)])
    best = {name: {key: max(r[key] for r in rs) for key in ("wall", "cpu")} for name, rs in runs.items()}
    result = {
        "command": " ".join(["python", "benchmarks/asktell_core.py", *sys.argv[1:]]),
        "trials": args.trials, "in_flight": args.in_flight, "repeats": args.repeats,
        "trials_per_second": best,
        "ratio_this_to_baseline": {key: best["this"][key] / best["baseline"][key] for key in ("wall", "cpu")},
        "runs": runs,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "python": platform.python_version(), "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("trials_per_second", "ratio_this_to_baseline", "load_average_before")}, indent=2))


if __name__ == "__main__":
    main()
