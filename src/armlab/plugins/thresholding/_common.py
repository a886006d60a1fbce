"""What the thresholding policies share: parameters, checks, oracle inputs and selection.

All seed-000 algorithms output the same set (section 2 of the sheet):
``{i : n_i >= 1 and mean_i >= tau}`` over *all* arms, eliminated ones included.  That is
exactly :func:`armlab.plugins.interfaces.empirical_recommendation` for the threshold
objective, so these policies inherit :meth:`Policy.recommend` instead of restating it.

Pending pulls: index policies here shrink an arm's confidence width by its *pulls*
(observed + pending) and compute means and variances from observed rewards only, as batched
UCB methods do (the width depends only on the count, so it can be updated before the result
arrives; Desautels, Krause & Burdick 2014).  With immediate feedback pulls equal observed
counts and the rules are exactly the papers'.  Eliminations and classifications use
observed statistics only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.policies._index import select_by_index
from armlab.problem import Problem, Truth
from armlab.stats import ArmStats

__all__ = [
    "IndexParams",
    "OracleIndexParams",
    "distance_to_threshold",
    "exploration_parameter",
    "require_budget",
    "select_lowest_key",
    "threshold_of",
]


class IndexParams(PluginParams):
    """Parameters every index policy of this family accepts."""

    tie_break: Literal["lowest", "random"] = Field(
        "lowest",
        description="exact ties of the index: lowest arm index (the authors' code), or uniformly "
        "at random keyed by (seed, replica, step)",
    )


class OracleIndexParams(IndexParams):
    """Index policies whose exploration parameter ``a`` defaults to an oracle value."""

    a: float | None = Field(
        None,
        gt=0,
        description="exploration parameter a, the same for every replica; default: a_scale times "
        "the policy's oracle value, computed from the source's true arms",
    )
    a_scale: float = Field(1.0, gt=0, description="multiplier of the oracle a; ignored when a is set")


def threshold_of(policy: Policy, problem: Problem) -> float:
    """The threshold tau of a thresholding problem (the config validator guarantees it)."""
    if problem.threshold is None:
        raise ConfigError(f"{policy.name}: the thresholding objective needs [problem] threshold, e.g. 0.5")
    return problem.threshold


def require_budget(policy: Policy, problem: Problem, minimum: int, why: str) -> None:
    """Raise unless the budget is larger than ``minimum`` (``why`` explains the bound)."""
    if problem.budget <= minimum:
        raise ConfigError(
            f"{policy.name}: budget {problem.budget} is too small for {problem.n_arms} arms: "
            f"it must exceed {minimum} ({why}). Raise [problem] budget above {minimum}."
        )


def distance_to_threshold(stats: ArmStats, threshold: float) -> np.ndarray:
    """Empirical gaps ``|mean_i - tau|``, shape ``(R, K)``."""
    return np.abs(stats.means - threshold)


def select_lowest_key(policy: Policy, stats: ArmStats, key: np.ndarray, need: int) -> np.ndarray:
    """Active arm minimising ``key`` once every active arm has ``need`` observations.

    Before that, arms are initialised in index order (see :func:`select_by_index`).
    """
    rng = policy.rng if policy.params.tie_break == "random" else None
    return select_by_index(stats, -key, need=need, rng=rng)


def exploration_parameter(
    policy: Policy,
    problem: Problem,
    replicas: int,
    *,
    what: str,
    complexity: Callable[[Truth], np.ndarray],
    numerator: float,
    formula: str,
) -> np.ndarray:
    """Per-replica ``a``, shape ``(R,)``: the explicit ``a``, or the oracle
    ``a_scale * numerator / complexity(truth)`` from the source's truth.

    Raises :class:`ConfigError` on live sources (no truth) and when the complexity is
    infinite (an arm exactly at the threshold, or tied best arms).
    """
    params = policy.params
    if params.a is not None:
        return np.full(replicas, params.a)
    truth = problem.require_truth(policy.name, what)
    try:
        value = complexity(truth)
    except ValueError as exc:
        raise ConfigError(
            f"{policy.name}: the oracle exploration parameter {formula} is undefined for this "
            f"instance ({exc}). Give the parameter `a` explicitly instead."
        ) from None
    return params.a_scale * numerator / np.broadcast_to(value, (replicas,))
