"""Greedy confidence pursuit, Fig. 3: is the completion-cost estimate (eq. 12) predictive of completion time?

Bachman & Precup draw 10-armed Bernoulli bandits (returns uniform on [0.1, 0.9], redrawn
until the gap r_(m) - r_(m+1) lies in [0.05, 0.15]; source ``random-bernoulli``), compute
eq. (12) at each bandit's *true* returns (the authors' code uses GapE-style top-m gaps), and
plot it against the mean completion time of their Bayes arm rule over 20 independent runs
of that bandit (completion: eq. (3) confidence >= 0.98 held for 100 trials; horizon 15 000),
for the top 1, 3 and 5 arms.

Paper: eq. (12) is highly predictive of the empirical completion cost (points close to a
line, for every m).

Ours: see examples/confidence_pursuit_multi/README.md (Spearman rank correlation and the log-log
slope of mean completion time on cost, per m).

    python examples/confidence_pursuit_multi/fig3_cost_predictiveness.py                 # paper scale
    python examples/confidence_pursuit_multi/fig3_cost_predictiveness.py --bandits 30 --runs 10

Replica ``b * runs + j`` is run ``j`` of bandit ``b``: every run of a bandit shares its
instance (drawn once, keyed by the seed and ``b``) and has its own outcome sequence (keyed
by the replica).  Runs that never complete count as the horizon, as in the figure.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from scipy import stats as scipy_stats

from armlab.config import FeedbackConfig
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.gcp.arm_rules import BayesTopM
from armlab.plugins.gcp.confidence_observer import ConfidenceObserver
from armlab.plugins.gcp.costs import completion_cost
from armlab.plugins.interfaces import RewardSource
from armlab.plugins.sources.random_bernoulli import RandomBernoulli
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom


class SharedInstances(RewardSource):
    """Bernoulli arms whose replica ``r`` plays instance ``r // runs`` of ``means``."""

    name = "shared-instances"
    reward_range = (0.0, 1.0)

    def __init__(self, means: np.ndarray, runs: int) -> None:
        super().__init__()
        self.means, self.runs = means, runs

    @property
    def n_arms(self) -> int:
        return self.means.shape[1]

    def truth_for(self, rng: KeyedRandom) -> Truth:
        means = self.means[rng.replicas // self.runs]
        return Truth(means=means, variances=means * (1.0 - means))

    def rewards_from_uniforms(self, rows, arms, u) -> np.ndarray:
        return (u < self.truth.means[rows, arms]).astype(np.float64)


def completion_times(means: np.ndarray, m: int, runs: int, horizon: int, seed: int) -> np.ndarray:
    """Completion time ``(bandits, runs)`` of the Bayes rule (Alg. 2) on every instance."""
    replicas = np.arange(means.shape[0] * runs)
    source = SharedInstances(means, runs)
    source.reset(replicas, seed)
    objective = Objective.BEST_ARM if m == 1 else Objective.TOP_M
    problem = Problem(objective=objective, budget=horizon, n_arms=means.shape[1], top_m=m,
                      truth=source.truth, source=source.name, reward_range=source.reward_range)
    observer = ConfidenceObserver(level=0.98, hold=100)
    sim = Simulation(policy_factory=lambda: BayesTopM({"warmup_per_arm": 10}), sources=[source],
                     problems=[problem], allocator=Single(), feedback=FeedbackConfig(), seed=seed,
                     replicas=replicas, checkpoints=[horizon], observers=[observer])
    while not sim.finished:
        sim.step()
        if observer.clock.completed.all():
            break  # later trials cannot change any completion time
    return observer.clock.times(horizon)[:, 0].reshape(means.shape[0], runs)


def run(bandits: int = 100, runs: int = 20, horizon: int = 15000, seed: int = 3,
        subsets: tuple[int, ...] = (1, 3, 5)) -> dict:
    """Per subset size m: costs, mean completion times, rank correlation and log-log slope."""
    out = {"bandits": bandits, "runs": runs, "horizon": horizon, "seed": seed, "subsets": {}}
    for m in subsets:
        generator = RandomBernoulli({"n_arms": 10, "m": m})
        means = generator.truth_for(KeyedRandom(seed, "fig3", m, replicas=np.arange(bandits))).means
        cost = completion_cost(means, m, gaps="gape")
        mean_time = completion_times(means, m, runs, horizon, seed).mean(axis=1)
        rho, _ = scipy_stats.spearmanr(cost, mean_time)
        slope = np.polyfit(np.log(cost), np.log(mean_time), 1)[0]
        out["subsets"][m] = {
            "cost": cost.tolist(),
            "mean_completion_time": mean_time.tolist(),
            "spearman": float(rho),
            "loglog_slope": float(slope),
            "censored_fraction": float((mean_time >= horizon).mean()),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bandits", type=int, default=100)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=15000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", help="write the per-bandit points as JSON here")
    args = parser.parse_args(argv)
    result = run(args.bandits, args.runs, args.horizon, args.seed)
    for m, entry in result["subsets"].items():
        print(f"top {m}: Spearman {entry['spearman']:.3f}, log-log slope {entry['loglog_slope']:.2f}, "
              f"censored {entry['censored_fraction']:.0%}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)


if __name__ == "__main__":
    sys.exit(main())
