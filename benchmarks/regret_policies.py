"""Run-steps per second of every regret policy at K = 100 arms and R = 100 replicas.

Not a test: a timing script for the regret suite (docs/algorithms/regret.md, the EUCBV paper).  Each
policy runs ``--steps`` steps of the vectorized engine on Experiment 2's instance (Gaussian
rewards; Bernoulli with the same means for the policies that need rewards in [0, 1]) and
reports replica-steps per second, i.e. ``R * steps / seconds`` including the engine's own
work, and the engine alone (round robin) for reference.

    .venv/bin/python benchmarks/regret_policies.py --steps 3000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from armlab.config import FeedbackConfig
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.scale.heap import reserve_heap_headroom
from armlab.plugins.allocators.single import Single
from armlab.plugins.policies.thompson import Thompson
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.regret import (
    DMED,
    EUCBV,
    KLUCB,
    MOSS,
    OCUCB,
    UCBV,
    BayesUCB,
    MedianElimination,
    UCBImproved,
)
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective, Problem

MEANS = [0.7] * 33 + [0.8] * 66 + [0.9]
VARIANCES = [0.7] * 33 + [0.1] * 66 + [0.7]
HORIZON = 300_000

CASES = [
    ("uniform (engine only)", Uniform, {}, "gaussian"),
    ("eucbv", EUCBV, {}, "gaussian"),
    ("ucb1", UCB1, {"tie_break": "random"}, "gaussian"),
    ("ucbv", UCBV, {}, "gaussian"),
    ("moss", MOSS, {}, "gaussian"),
    ("ocucb", OCUCB, {}, "gaussian"),
    ("klucb gaussian", KLUCB, {"divergence": "gaussian"}, "gaussian"),
    ("klucb bernoulli newton", KLUCB, {}, "bernoulli"),
    ("klucb bernoulli bisection", KLUCB, {"solver": "bisection"}, "bernoulli"),
    ("dmed", DMED, {}, "bernoulli"),
    ("thompson gaussian", Thompson, {"prior": "gaussian"}, "gaussian"),
    ("thompson beta", Thompson, {}, "bernoulli"),
    ("bayes-ucb gaussian", BayesUCB, {"posterior": "gaussian"}, "gaussian"),
    ("bayes-ucb beta", BayesUCB, {}, "bernoulli"),
    ("ucb-improved", UCBImproved, {}, "gaussian"),
    ("median-elimination", MedianElimination, {}, "gaussian"),
]


def steps_per_second(cls, params, kind: str, replicas: int, steps: int) -> float:
    source = Gaussian({"means": MEANS, "variances": VARIANCES}) if kind == "gaussian" else Bernoulli({"means": MEANS})
    ids = np.arange(replicas)
    source.reset(ids, 0)
    problem = Problem(objective=Objective.REGRET, budget=HORIZON, n_arms=len(MEANS), truth=source.truth,
                      source=source.name, reward_range=source.reward_range)
    sim = Simulation(policy_factory=lambda: cls(params), sources=[source], problems=[problem], allocator=Single(),
                     feedback=FeedbackConfig(), seed=0, replicas=ids, checkpoints=[HORIZON])
    start = time.perf_counter()
    for _ in range(steps):
        sim.step()
    return replicas * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    reserve_heap_headroom()  # as the armlab command does, so the figures stay comparable
    print(f"K = {len(MEANS)}, R = {args.replicas}, {args.steps} steps from t = 1")
    for label, cls, params, kind in CASES:
        rate = steps_per_second(cls, params, kind, args.replicas, args.steps)
        print(f"{label:28s} {rate:12.3g} run-steps/s   {1e6 * args.replicas / rate:8.0f} us/step")


if __name__ == "__main__":
    main()
