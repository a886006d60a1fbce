"""Sticky units at a million: ask latency through LiveExperiment, the binding table alone, and
memory per unit.

**Through LiveExperiment** (``through_experiment``): a one-bandit experiment (UCB1, 10 arms,
no journal: the journal's cost is the same with or without a unit) is first timed empty, then
filled with ``--units`` units through the public path, ``ask(unit=...)`` then ``tell`` for each
(as a service with a million users would have seen them; a replay of a journal holding them
rebuilds the same table), and timed again.  Each timing is CPU time per ask over a block of
``--block`` asks (the tells that free the slots run outside the timer), fastest of
``--repeats`` blocks: an ask without a unit, an ask for a new unit (dispatch and bind) and, at a
million, an ask for a known unit whose trial closed (a repeat exposure), in random order.

**The binding table alone** (``at_units``, ``at_10000``): binds the units (ids like
``user-000123456``, 10 arms), then decides asks for known units in random order and for unknown
ones; the same at 10,000 units shows whether the cost per ask grows with the number of units.
Memory per unit is what ``tracemalloc`` sees the bindings (and their unit strings) take.
Writes ``results/sticky_units.json`` with the load average.

    python benchmarks/sticky_units.py [--units 1000000] [--repeats 3] [--block 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from pathlib import Path

import numpy as np

from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.plugins.policies.ucb1 import UCB1
from armlab.problem import Objective, Problem
from armlab.safeguards import StickyUnits

ARMS = 10


def never(*_: int) -> bool:
    return False


def measure(n: int, repeats: int) -> dict:
    names = [f"user-{i:09d}" for i in range(n)]
    order = [names[i] for i in np.random.default_rng(0).permutation(n)]
    unknown = [f"new-{i:09d}" for i in range(n)]
    best = {"bind": np.inf, "ask_known": np.inf, "ask_unknown": np.inf}
    for _ in range(repeats):
        units = StickyUnits()
        start = time.process_time()
        for trial, name in enumerate(names):
            units.bind(name, trial, trial % 10, 0)
        best["bind"] = min(best["bind"], (time.process_time() - start) / n)
        start = time.process_time()
        for name in order:
            units.decide(name, never, never)
        best["ask_known"] = min(best["ask_known"], (time.process_time() - start) / n)
        start = time.process_time()
        for name in unknown:
            units.decide(name, never, never)
        best["ask_unknown"] = min(best["ask_unknown"], (time.process_time() - start) / n)
    return {f"{key}_us": value * 1e6 for key, value in best.items()}


def timed_asks(experiment: LiveExperiment, units: list[str | None]) -> float:
    """CPU seconds per ask over ``units`` (None: an ask without a unit); the trials dispatched
    are told afterwards, outside the timer, so the in-flight slots are free again."""
    start = time.process_time()
    trials = [experiment.ask(unit=unit) for unit in units]
    elapsed = (time.process_time() - start) / len(units)
    for trial in trials:
        if trial.exposure != "repeat":
            experiment.tell(trial.id, 1.0)
    return elapsed


def through_experiment(n: int, repeats: int, block: int) -> dict:
    """Ask latency through LiveExperiment empty and with ``n`` units bound (see the module docstring)."""
    problem = Problem(objective=Objective.BEST_ARM, budget=n + 4 * repeats * block, n_arms=ARMS,
                      reward_range=(0.0, 1.0))
    experiment = LiveExperiment(UCB1, [problem], 0, in_flight=block)
    fresh = iter(f"new-{i:09d}" for i in range(2 * repeats * block))
    empty = {
        "ask_no_unit_us": min(timed_asks(experiment, [None] * block) for _ in range(repeats)),
        "ask_new_unit_us": min(timed_asks(experiment, [next(fresh) for _ in range(block)]) for _ in range(repeats)),
    }
    start = time.process_time()
    for first in range(0, n, block):
        timed_asks(experiment, [f"user-{i:09d}" for i in range(first, min(n, first + block))])
    fill_us = (time.process_time() - start) / n * 1e6
    rng = np.random.default_rng(1)
    full = {
        "ask_no_unit_us": min(timed_asks(experiment, [None] * block) for _ in range(repeats)),
        "ask_new_unit_us": min(timed_asks(experiment, [next(fresh) for _ in range(block)]) for _ in range(repeats)),
        "ask_known_unit_repeat_us": min(
            timed_asks(experiment, [f"user-{i:09d}" for i in rng.integers(0, n, block)]) for _ in range(repeats)),
    }
    assert len(experiment.safeguards.units) >= n
    return {"policy": "ucb1", "arms": ARMS, "block": block,
            "prefill": "public path: ask(unit=...) then tell, per unit",
            "prefill_ask_and_tell_us": fill_us,
            "empty": {k: v * 1e6 for k, v in empty.items()},
            "at_units": {k: v * 1e6 for k, v in full.items()}}


def bytes_per_unit(n: int) -> float:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    units = StickyUnits()
    for trial in range(n):
        units.bind(f"user-{trial:09d}", trial, trial % 10, 0)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(units) == n
    return used / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--block", type=int, default=20_000)
    args = parser.parse_args()
    results = {
        "units": args.units,
        "load_average_before": os.getloadavg()[0],
        "through_experiment": through_experiment(args.units, args.repeats, args.block),
        "at_units": measure(args.units, args.repeats),
        "at_10000": measure(10_000, args.repeats),
        "bytes_per_unit": bytes_per_unit(args.units),
    }
    results["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(results, indent=2))
    out = Path(__file__).parent / "results" / "sticky_units.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
