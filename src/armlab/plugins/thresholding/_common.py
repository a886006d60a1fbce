"""What the thresholding policies share: parameters, checks, oracle inputs and selection.

All thresholding algorithms of Mukherjee et al. (2017) output the same set:
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
from typing import Any, Literal

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins._fast.incremental_index import IncrementalIndex
from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.problem import Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "ArmwiseKeyPolicy",
    "IndexParams",
    "OracleIndexParams",
    "Variant",
    "authors_code_gaps",
    "exploration_parameter",
    "require_budget",
    "threshold_of",
    "variant_field",
]


#: "paper": the algorithm as printed; "authors-code": as the authors' public code runs it
Variant = Literal["paper", "authors-code"]


def variant_field(paper: str, authors_code: str) -> Any:
    """The ``variant`` parameter of a policy with an authors'-code reading (docs/algorithms/thresholding.md)."""
    return Field(
        "paper",
        description=f'"paper": {paper} (default); "authors-code": {authors_code}, as the public code '
        "behind Mukherjee et al.'s (IJCAI 2017) figures runs it",
    )


class IndexParams(PluginParams):
    """Parameters every index policy of this family accepts."""

    tie_break: TieBreak = tie_break_field()


class OracleIndexParams(IndexParams):
    """Index policies whose exploration parameter ``a`` defaults to an oracle value."""

    a: float | None = Field(
        None,
        gt=0,
        description="exploration parameter a, the same for every replica; default: a_scale times "
        "the policy's oracle value, computed from the source's true arms",
    )
    a_scale: float = Field(1.0, gt=0, description="multiplier of the oracle a; ignored when a is set")


def authors_code_gaps(means: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The arms the authors' code sums its oracle complexities over, and their gaps.

    Returns ``(counted, gaps)``: ``counted`` marks the arms whose true mean differs from the
    mean of the last arm (arm K); ``gaps`` is ``|tau - mu_i|`` on those arms and 1 elsewhere
    (a placeholder that keeps the left-out terms finite; multiply them by ``counted``).
    Raises ``ValueError`` when no arm is counted or a counted arm is exactly at ``tau``.
    """
    counted = means != means[..., -1:]
    if not counted.any(axis=-1).all():
        raise ValueError("every arm has the last arm's mean, so the authors' sum has no term")
    gaps = np.abs(threshold - means)
    if np.any(counted & (gaps == 0)):
        raise ValueError("zero gap: an arm exactly at the threshold makes the complexity infinite")
    return counted, np.where(counted, gaps, 1.0)


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
    truth = problem.require_truth(policy.name, what, parameter="a")
    try:
        value = complexity(truth)
    except ValueError as exc:
        raise ConfigError(
            f"{policy.name}: the oracle exploration parameter {formula} is undefined for this "
            f"instance ({exc}). Give the parameter `a` explicitly instead."
        ) from None
    return params.a_scale * numerator / np.broadcast_to(value, (replicas,))


class ArmwiseKeyPolicy(Policy):
    """An index policy whose key for an arm depends only on that arm's statistics (APT,
    UCB-E, UCBEV): after ``need`` pulls of every arm, pull the arm of lowest key.

    Subclasses give the key at flat positions, :meth:`key_at`; the key is then kept current
    by recomputing only the arms observed at each step (:class:`IncrementalIndex`), so a step
    costs one pass over the arms instead of several.  Ties and the initial pulls are as in
    :func:`~armlab.plugins.selection.select_by_index`.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    need: int = 1

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._negated_key = IncrementalIndex(lambda s, rows, flat: -self.key_at(s, rows, flat), replicas, problem.n_arms)
        self._warmup = WarmArms(need=self.need)

    def key_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """The key (to minimise) at flat positions ``flat`` of replicas ``rows``."""
        raise NotImplementedError

    def key(self, stats: ArmStats) -> np.ndarray:
        """The key of every arm, ``(R, K)``, recomputed."""
        return -self._negated_key.compute(stats)

    def update(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        self._negated_key.observed(stats, rows, arms)

    def select(self, stats: ArmStats) -> np.ndarray:
        rng = self.rng if self.params.tie_break == "random" else None
        return self._warmup.select(stats, self._negated_key.current(stats), rng)


def gathered(stats: ArmStats, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed counts, pulls (observed + pending) and means at flat positions."""
    return stats.counts.reshape(-1)[flat], stats.pulls_at(flat), stats.means.reshape(-1)[flat]
