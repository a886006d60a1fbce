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

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.plugins._fast.kept_arm_values import KeptArmValues
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.problem import Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "ArmView",
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


class ArmView:
    """The statistics of some arms, entry by entry, for a rule stated arm by arm.

    :meth:`every` views every arm of every replica, shape ``(R, K)``; :meth:`at` the arms at
    flat positions ``flat`` (:meth:`ArmStats.flat_index`) of replicas ``rows``, 1-d.  A rule
    written with these fields, and :meth:`per_replica` for a constant of each replica, reads
    the same and gives the same numbers on both.
    """

    def __init__(self, stats: ArmStats, rows: np.ndarray | None = None, flat: np.ndarray | None = None) -> None:
        self._stats, self._rows, self._flat = stats, rows, flat

    @classmethod
    def every(cls, stats: ArmStats) -> ArmView:
        return cls(stats)

    @classmethod
    def at(cls, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> ArmView:
        return cls(stats, rows, flat)

    def _entries(self, values: np.ndarray) -> np.ndarray:
        return values if self._flat is None else values.reshape(-1)[self._flat]

    @property
    def pulls(self) -> np.ndarray:
        """``n_i`` of an index: pulls dispatched, observed or pending."""
        return self._stats.pulls if self._flat is None else self._stats.pulls_at(self._flat)

    @property
    def counts(self) -> np.ndarray:
        """Observed results (what eliminations count)."""
        return self._entries(self._stats.counts)

    @property
    def means(self) -> np.ndarray:
        """Empirical means of the observed results (0 before any)."""
        return self._entries(self._stats.means)

    @property
    def active(self) -> np.ndarray:
        """Whether the arm is still active (not eliminated)."""
        return self._entries(self._stats.active)

    def variances(self, ddof: int = 0) -> np.ndarray:
        """Empirical variances of the observed results: ``ddof = 0`` the biased ``v_i``,
        ``ddof = 1`` the unbiased ``s_i^2``; 0 with ``ddof`` results or fewer (their ``M2`` is 0)."""
        return self._entries(self._stats.m2) / np.maximum(self.counts - ddof, 1)

    def per_replica(self, values: np.ndarray) -> np.ndarray:
        """A value per replica ``(R,)``, spread over the viewed arms."""
        return values[:, None] if self._rows is None else values[self._rows]


class ArmwiseKeyPolicy(IndexPolicy):
    """A thresholding index policy (APT, UCB-E, UCBEV, AugUCB): once every arm has ``need``
    results, pull the active arm of lowest :meth:`key`.

    Subclasses state the key as their paper prints it, arm by arm, on an :class:`ArmView`.
    The index maximised by :class:`~armlab.plugins.index_policy.IndexPolicy` is the key
    negated.  An arm's key depends on that arm's statistics and on constants of its replica
    only, so the index is kept by an
    :class:`~armlab.plugins._fast.kept_arm_values.KeptArmValues`, which recomputes only
    the arms just observed (:meth:`current_index`); a subclass that changes a replica's
    constants calls ``self.kept_index.refresh_rows``.
    """

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.kept_index = KeptArmValues(self._index_at, replicas, problem.n_arms)

    @abstractmethod
    def key(self, arm: ArmView) -> np.ndarray:
        """The key of the viewed arms, to minimise."""

    def index(self, stats: ArmStats) -> np.ndarray:
        return -self.key(ArmView.every(stats))

    def current_index(self, stats: ArmStats) -> np.ndarray:
        return self.kept_index.current(stats)

    def update(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        self.kept_index.observed(stats, rows, arms)

    def _index_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        return -self.key(ArmView.at(stats, rows, flat))
