"""Fixtures for the thresholding policies: drive a policy by hand, or run it in the engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.interfaces import Policy
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Objective, Problem
from armlab.testing import problem_with_truth, pull_once, simulate_policy, start_policy

ONE = np.array([0])


def problem(means: Sequence[float], budget: int, threshold: float = 0.5, variances=None,
            objective: Objective = Objective.THRESHOLD, with_truth: bool = True) -> Problem:
    """A one-replica problem whose truth is ``means`` (variances default to 0.25)."""
    return problem_with_truth(means, budget, 0.25 if variances is None else variances, objective,
                              with_truth=with_truth, threshold=threshold)


def simulate(policy_factory: Callable[[], Policy], means: Sequence[float], budget: int,
             variances: float | Sequence[float] = 0.25, replicas: int = 1, threshold: float = 0.5,
             delay: int = 0, checkpoints: Sequence[int] | None = None, seed: int = 0) -> Simulation:
    """Run a thresholding policy to the end on Gaussian arms in the engine."""
    spread = variances if np.isscalar(variances) else list(variances)
    source = Gaussian({"means": list(means), "variances": spread})
    return simulate_policy(policy_factory, source, budget=budget, objective=Objective.THRESHOLD,
                           replicas=replicas, seed=seed, delay=delay, checkpoints=checkpoints, threshold=threshold)


class Drive:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    ONE = ONE
    problem = staticmethod(problem)
    start = staticmethod(start_policy)
    pull = staticmethod(pull_once)
    simulate = staticmethod(simulate)


@pytest.fixture
def drive() -> type[Drive]:
    return Drive
