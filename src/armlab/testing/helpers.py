"""Small building blocks for policy tests: drive a policy by hand, or run it in the engine.

Two ways to test a policy beside its conformance check:

* **by hand**, one step at a time on rewards the test chooses: :func:`problem_with_truth`
  describes the bandit, :func:`start_policy` resets the policy and returns empty
  statistics, and :func:`pull_once` selects, dispatches and observes one trial of replica 0;
* **in the Monte Carlo engine**, on a simulated source: :func:`simulate_policy` runs a
  policy to the end and returns the finished :class:`~armlab.orchestrator.montecarlo.engine.Simulation`
  (counts, means, error or regret per checkpoint, stopping times).

armlab's own test suites use them, and so can a plugin's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from armlab.config import FeedbackConfig
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.allocators.single import Single
from armlab.plugins.interfaces import STOPPED, Policy, RewardSource
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["problem_with_truth", "pull_once", "simulate_policy", "start_policy"]

ONE = np.array([0])


def problem_with_truth(
    means: Sequence[float],
    budget: int,
    variances: float | Sequence[float] = 0.25,
    objective: Objective = Objective.BEST_ARM,
    *,
    with_truth: bool = True,
    **fields: Any,
) -> Problem:
    """A one-replica problem whose true arm means are ``means`` (and variances ``variances``,
    one number for all arms or one per arm); ``with_truth=False`` hides the truth, as a live
    source does.  ``fields`` are further :class:`~armlab.problem.Problem` fields (``top_m``,
    ``threshold``, ``delta``, ``reward_range``...)."""
    mu = np.asarray([means], dtype=float)
    var = np.broadcast_to(np.asarray(variances, dtype=float), mu.shape).copy()
    truth = Truth(means=mu, variances=var) if with_truth else None
    return Problem(objective=objective, budget=budget, n_arms=mu.shape[1], truth=truth,
                   **{"source": "test", **fields})


def start_policy(policy: Policy, problem: Problem, replicas: int = 1) -> ArmStats:
    """Reset ``policy`` for ``replicas`` runs of ``problem`` (randomness keyed by seed 0, as
    the engine keys it) and return the empty statistics to drive it with."""
    policy.reset(problem, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
    return ArmStats(replicas, problem.n_arms)


def pull_once(policy: Policy, stats: ArmStats, reward_of: Callable[[int], float]) -> int:
    """One trial of replica 0: ``select``, dispatch, observe ``reward_of(arm)`` at once and
    ``update`` the policy.  Returns the arm, or :data:`~armlab.STOPPED` (nothing is pulled)."""
    arm = int(policy.select(stats)[0])
    if arm == STOPPED:
        return arm
    reward = np.array([float(reward_of(arm))])
    stats.dispatch(ONE, np.array([arm]))
    stats.observe(ONE, np.array([arm]), reward)
    policy.update(stats, ONE, np.array([arm]), reward)
    return arm


def simulate_policy(
    policy_factory: Callable[[], Policy],
    source: RewardSource,
    *,
    budget: int,
    objective: Objective = Objective.BEST_ARM,
    replicas: int | np.ndarray = 1,
    seed: int = 0,
    delay: int = 0,
    checkpoints: Sequence[int] | None = None,
    **fields: Any,
) -> Simulation:
    """Run ``policy_factory()`` to the end on ``source`` in the Monte Carlo engine.

    ``replicas`` is a count (replicas ``0 .. n-1``) or the global replica ids themselves;
    ``delay`` holds every result back that many steps; ``checkpoints`` default to the budget
    alone.  The problem takes its truth and reward range from ``source``; ``fields`` are
    further :class:`~armlab.problem.Problem` fields (``top_m``, ``threshold``, ``delta``...).
    """
    ids = np.arange(replicas) if np.isscalar(replicas) else np.asarray(replicas)
    source.reset(ids, seed)
    problem = Problem(objective=objective, budget=budget, n_arms=source.n_arms, truth=source.truth,
                      source=source.name, reward_range=source.reward_range, **fields)
    sim = Simulation(policy_factory=policy_factory, sources=[source], problems=[problem], allocator=Single(),
                     feedback=FeedbackConfig(delay=delay), seed=seed, replicas=ids,
                     checkpoints=list(checkpoints or [budget]))
    while not sim.finished:
        sim.step()
    return sim
