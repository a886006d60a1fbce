"""Fixtures for the thresholding policies: drive a policy by hand, or run it in the engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from armlab.config import FeedbackConfig
from armlab.orchestrator.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.interfaces import STOPPED, Policy
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

ONE = np.array([0])


def problem(means: Sequence[float], budget: int, threshold: float = 0.5, variances=None,
            objective: Objective = Objective.THRESHOLD, with_truth: bool = True) -> Problem:
    """A one-replica problem whose truth is ``means`` (variances default to 0.25)."""
    mu = np.asarray([means], dtype=float)
    var = np.full_like(mu, 0.25) if variances is None else np.asarray([variances], dtype=float)
    return Problem(objective=objective, budget=budget, n_arms=mu.shape[1], threshold=threshold,
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
    stats.dispatch(ONE, np.array([arm]))
    stats.observe(ONE, np.array([arm]), reward)
    policy.update(stats, ONE, np.array([arm]), reward)
    return arm


def simulate(policy_factory: Callable[[], Policy], means: Sequence[float], budget: int,
             variances: float | Sequence[float] = 0.25, replicas: int = 1, threshold: float = 0.5,
             delay: int = 0, checkpoints: Sequence[int] | None = None, seed: int = 0) -> Simulation:
    """Run a thresholding policy to the end on Gaussian arms in the engine."""
    spread = variances if np.isscalar(variances) else list(variances)
    source = Gaussian({"means": list(means), "variances": spread})
    ids = np.arange(replicas)
    source.reset(ids, seed)
    prob = Problem(objective=Objective.THRESHOLD, budget=budget, n_arms=len(means), threshold=threshold,
                   truth=source.truth, source=source.name)
    sim = Simulation(policy_factory=policy_factory, sources=[source], problems=[prob], allocator=Single(),
                     feedback=FeedbackConfig(delay=delay), seed=seed, replicas=ids,
                     checkpoints=list(checkpoints or [budget]))
    while not sim.finished:
        sim.step()
    return sim


class Drive:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    ONE = ONE
    problem = staticmethod(problem)
    start = staticmethod(start)
    pull = staticmethod(pull)
    simulate = staticmethod(simulate)


@pytest.fixture
def drive() -> type[Drive]:
    return Drive
