"""Sticky units at a million: bind and ask (decide) latency, and memory per unit.

Binds ``--units`` units (ids like ``user-000123456``, trials numbered in order, 10 arms), then
decides asks for known units in random order (the trial closed: a repeat exposure) and for
unknown ones, timing each phase in CPU time, fastest of ``--repeats``; the same at 10,000
units shows whether the cost per ask grows with the number of units.  Memory per unit is
what ``tracemalloc`` sees the bindings (and their unit strings) take.  Writes
``results/sticky_units.json`` with the load average.

    python benchmarks/sticky_units.py [--units 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from pathlib import Path

import numpy as np

from armlab.safeguards import StickyUnits


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
    args = parser.parse_args()
    results = {
        "units": args.units,
        "load_average_before": os.getloadavg()[0],
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
