"""Fixtures for the fixed-budget policies: drive a policy by hand, or run it in the engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.interfaces import STOPPED, Policy, RewardSource
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

ONE = np.array([0])


def problem(means: Sequence[float], budget: int, variances: float | Sequence[float] = 0.25,
            objective: Objective = Objective.BEST_ARM, top_m: int = 1, with_truth: bool = True) -> Problem:
    """A one-replica problem whose truth is ``means`` and ``variances``."""
    mu = np.asarray([means], dtype=float)
    var = np.broadcast_to(np.asarray(variances, dtype=float), mu.shape).copy()
    return Problem(objective=objective, budget=budget, n_arms=mu.shape[1], top_m=top_m,
                   truth=Truth(means=mu, variances=var) if with_truth else None, source="test")


def start(policy: Policy, prob: Problem, replicas: int = 1) -> ArmStats:
    policy.reset(prob, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
    return ArmStats(replicas, prob.n_arms)


def pull(policy: Policy, stats: ArmStats, reward_of: Callable[[int], float]) -> int:
    """One step of replica 0: select, dispatch, observe ``reward_of(arm)``; return the arm."""
    arm = int(policy.select(stats)[0])
    if arm == STOPPED:
        return arm
    reward = np.array([float(reward_of(arm))])
    stats.record(ONE, np.array([arm]), reward)
    policy.update(stats, ONE, np.array([arm]), reward)
    return arm


def run_to_end(policy: Policy, stats: ArmStats, reward_of: Callable[[int], float]) -> list[int]:
    """Pull until the policy stops (or the budget is spent); return the arms pulled."""
    arms = []
    while len(arms) < policy.problem.budget:
        arm = pull(policy, stats, reward_of)
        if arm == STOPPED:
            break
        arms.append(arm)
    return arms


def alternating(means: Sequence[float], spread: float = 0.01) -> Callable[[int], float]:
    """Deterministic rewards ``mean -+ spread`` alternating per arm (sample variance > 0)."""
    seen: dict[int, int] = {}

    def reward(arm: int) -> float:
        seen[arm] = seen.get(arm, 0) + 1
        return means[arm] + (spread if seen[arm] % 2 == 0 else -spread)

    return reward


def simulate(policy_factory: Callable[[], Policy], source: RewardSource | None = None, *, budget: int,
             replicas: int = 1, means: Sequence[float] | None = None, variances: float | Sequence[float] = 0.25,
             delay: int = 0, seed: int = 0, objective: Objective = Objective.BEST_ARM, top_m: int = 1) -> Simulation:
    """Run a policy to the end in the engine (on ``source``, or Gaussian arms ``means``)."""
    if source is None:
        spread = variances if np.isscalar(variances) else list(variances)
        source = Gaussian({"means": list(means), "variances": spread})
    ids = np.arange(replicas)
    source.reset(ids, seed)
    prob = Problem(objective=objective, budget=budget, n_arms=source.n_arms, top_m=top_m, truth=source.truth,
                   source=source.name)
    sim = Simulation(policy_factory=policy_factory, sources=[source], problems=[prob], allocator=Single(),
                     feedback=FeedbackConfig(delay=delay), seed=seed, replicas=ids, checkpoints=[budget])
    while not sim.finished:
        sim.step()
    return sim


class Drive:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    ONE = ONE
    problem = staticmethod(problem)
    start = staticmethod(start)
    pull = staticmethod(pull)
    run_to_end = staticmethod(run_to_end)
    alternating = staticmethod(alternating)
    simulate = staticmethod(simulate)


@pytest.fixture(scope="session")
def drive() -> type[Drive]:
    return Drive
