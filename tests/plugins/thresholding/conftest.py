"""Fixtures for the thresholding policies: a thresholding problem, a run on Gaussian arms.

Statistics and single pulls come from :mod:`armlab.testing` (``start_policy``, ``pull_once``),
imported by the tests themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.interfaces import Policy
from armlab.plugins.sources.simulated import Gaussian
from armlab.problem import Objective, Problem
from armlab.testing import problem_with_truth, simulate_policy


def _threshold_problem(means: Sequence[float], budget: int, threshold: float = 0.5, variances=None,
                       objective: Objective = Objective.THRESHOLD, with_truth: bool = True) -> Problem:
    return problem_with_truth(means, budget, 0.25 if variances is None else variances, objective,
                              with_truth=with_truth, threshold=threshold)


def _simulate_gaussian(policy_factory: Callable[[], Policy], means: Sequence[float], budget: int,
                       variances: float | Sequence[float] = 0.25, replicas: int = 1, threshold: float = 0.5,
                       delay: int = 0, checkpoints: Sequence[int] | None = None, seed: int = 0) -> Simulation:
    spread = variances if np.isscalar(variances) else list(variances)
    source = Gaussian({"means": list(means), "variances": spread})
    return simulate_policy(policy_factory, source, budget=budget, objective=Objective.THRESHOLD,
                           replicas=replicas, seed=seed, delay=delay, checkpoints=checkpoints, threshold=threshold)


@pytest.fixture(scope="session")
def threshold_problem() -> Callable[..., Problem]:
    """``threshold_problem(means, budget, threshold=0.5, variances=0.25, objective=THRESHOLD,
    with_truth=True)``: a one-replica problem whose truth is ``means``."""
    return _threshold_problem


@pytest.fixture(scope="session")
def simulate_gaussian() -> Callable[..., Simulation]:
    """``simulate_gaussian(policy_factory, means, budget, variances=0.25, replicas=1, ...)``: a
    thresholding policy run to the end on Gaussian arms in the engine."""
    return _simulate_gaussian
