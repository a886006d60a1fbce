"""Run-steps per second of Thompson sampling at many arms, against numpy's own samplers.

At K arms and R replicas one step of Thompson sampling draws an ``(R, K)`` array of posterior
samples and takes an argmax per row; numpy's generator drawing the same array and taking
the argmax is the limit a vectorised policy can hope for.  In one process, alternating and
keeping the fastest of ``--repeats`` rounds (``timeit``'s rule on a shared machine), this
measures through the engine (:func:`engine_speed.engine_speed`: warm-up of K steps, then
``--steps`` timed steps):

* ``thompson-gaussian`` and ``thompson-beta`` (the two priors) and ``ucb1``;
* ``normal-limit``: ``standard_normal((R, K))`` plus the argmax per row;
* ``beta-limit``: ``beta(a, b, (R, K))`` plus the argmax per row (the Beta prior's limit).

A run-step is one trial of one replica.  Prints every speed, the ratio of each prior to its
limit, and the load average, and writes ``benchmarks/results/thompson_many_arms.json``.
To measure another tree (the one before a change), run it with ``PYTHONPATH=OTHER/src``.

    python benchmarks/thompson_many_arms.py --arms 1000 --replicas 200 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from engine_speed import engine_speed, fastest  # noqa: E402

import armlab  # noqa: E402
from armlab.plugins.manager import get_plugin_manager  # noqa: E402
from armlab.plugins.registry import Registry  # noqa: E402


def numpy_limit(draw, k: int, r: int, steps: int) -> float:
    """Run-steps per second of ``draw(gen, (r, k))`` plus a row argmax, ``steps`` times."""
    gen = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(steps):
        np.argmax(draw(gen, (r, k)), axis=1)
    return r * steps / (time.perf_counter() - start)


def thompson(prior: str):
    """A zero-argument policy factory of Thompson sampling with ``prior``, shaped as
    :func:`engine_speed.build` reads a policy class (``name``, ``objectives``)."""
    cls = Registry(get_plugin_manager(load_entrypoints=False)).get("policy", "thompson")
    factory = partial(cls, {"prior": prior})
    factory.name, factory.objectives = cls.name, cls.objectives
    return factory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--steps", type=int, default=200, help="timed steps per measure")
    parser.add_argument("--repeats", type=int, default=3, help="report the fastest of this many rounds")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "thompson_many_arms.json"))
    args = parser.parse_args()
    k, r, steps = args.arms, args.replicas, args.steps
    ucb1 = Registry(get_plugin_manager(load_entrypoints=False)).get("policy", "ucb1")
    measures = {
        "thompson-gaussian": partial(engine_speed, thompson("gaussian"), k, r, steps),
        "normal-limit": partial(numpy_limit, lambda gen, shape: gen.standard_normal(shape), k, r, steps),
        "thompson-beta": partial(engine_speed, thompson("beta"), k, r, steps),
        "beta-limit": partial(numpy_limit, lambda gen, shape: gen.beta(2.0, 3.0, shape), k, r, steps),
        "ucb1": partial(engine_speed, ucb1, k, r, steps),
    }
    speeds = dict(zip(measures, fastest(args.repeats, *measures.values()), strict=True))
    load = os.getloadavg()
    result = {
        "arms": k, "replicas": r, "steps": steps, "repeats": args.repeats,
        "run_steps_per_s": speeds,
        "gaussian_to_limit": speeds["normal-limit"] / speeds["thompson-gaussian"],
        "beta_to_limit": speeds["beta-limit"] / speeds["thompson-beta"],
        "armlab": str(Path(armlab.__file__).parent), "load_average": load,
        "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
    }
    for name, speed in speeds.items():
        print(f"{name:18s} {speed:10.3g} run-steps/s")
    print(f"limit / thompson-gaussian {result['gaussian_to_limit']:.2f}x, "
          f"limit / thompson-beta {result['beta_to_limit']:.2f}x  (armlab: {result['armlab']})")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
