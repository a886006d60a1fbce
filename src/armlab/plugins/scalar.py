"""One-replica policies for plugin authors, and the wrapper that runs them over replicas.

Writing a vectorized policy is the fast path; a :class:`ScalarPolicy` is the easy one.  The
registry wraps every registered ``ScalarPolicy`` with :func:`vectorize`, which keeps one
instance per replica and loops over them in Python (slow, but correct and deterministic).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from armlab.plugins.interfaces import ALL_OBJECTIVES, Plugin, Policy, empirical_recommendation
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["ReplicaView", "ScalarPolicy", "vectorize"]


class ReplicaView:
    """Row ``r`` of an :class:`ArmStats`: arrays of shape ``(K,)`` (views, not copies)."""

    def __init__(self, stats: ArmStats, row: int) -> None:
        self.counts = stats.counts[row]
        self.means = stats.means[row]
        self.m2 = stats.m2[row]
        self.pending = stats.pending[row]
        self.active = stats.active[row]
        self.dispatched = int(stats.dispatched[row])
        self.observed = int(stats.observed[row])
        self.n_arms = stats.n_arms

    def variances(self, ddof: int = 0) -> np.ndarray:
        """Empirical variances of this replica's arms (0 where ``n <= ddof``)."""
        denom = self.counts - ddof
        out = np.zeros_like(self.m2)
        np.divide(self.m2, denom, out=out, where=denom > 0)
        return out


class ScalarPolicy(Plugin, ABC):
    """A policy written for a single replica.

    ``rng`` is a :class:`~armlab.random.KeyedRandom` over one replica, so
    ``rng.uniform(step, k)[0]`` gives ``k`` uniforms keyed by this replica and ``step``.
    """

    objectives: ClassVar[frozenset[Objective]] = ALL_OBJECTIVES

    def reset(self, problem: Problem, rng: KeyedRandom) -> None:
        """Prepare state for one run of ``problem``."""
        self.problem = problem
        self.rng = rng

    @abstractmethod
    def select(self, stats: ReplicaView) -> int:
        """Return the arm to pull next, or ``STOPPED`` (-1) when done."""

    def update(self, stats: ReplicaView, arm: int, reward: float) -> None:
        """React to one result (``stats`` already includes it)."""

    def recommend(self, stats: ReplicaView) -> int | np.ndarray:
        """Best arm (int) or a boolean mask ``(K,)``; default: empirical means."""
        return empirical_recommendation(self.problem, _one_row(stats))[0]


def _one_row(view: ReplicaView) -> ArmStats:
    single = ArmStats(1, view.n_arms)
    single.counts[0], single.means[0], single.m2[0] = view.counts, view.means, view.m2
    return single


def vectorize(scalar_cls: type[ScalarPolicy]) -> type[Policy]:
    """Build the :class:`Policy` class that runs ``scalar_cls`` once per replica."""

    class Vectorized(Policy):
        name = scalar_cls.name
        Params = scalar_cls.Params
        objectives = scalar_cls.objectives
        scalar = scalar_cls
        __doc__ = scalar_cls.__doc__
        __module__ = scalar_cls.__module__

        def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
            super().reset(problem, replicas, rng)
            self._members = []
            for replica in rng.replicas:
                member = scalar_cls(self.params)
                member.reset(problem, KeyedRandom(*rng.words, replicas=np.array([replica])))
                self._members.append(member)

        def select(self, stats: ArmStats) -> np.ndarray:
            return np.array(
                [m.select(ReplicaView(stats, r)) for r, m in enumerate(self._members)],
                dtype=np.int64,
            )

        def update(self, stats, rows, arms, rewards) -> None:
            for r, a, x in zip(rows.tolist(), arms.tolist(), rewards.tolist(), strict=True):
                self._members[r].update(ReplicaView(stats, r), a, x)

        def recommend(self, stats: ArmStats) -> np.ndarray:
            answers = [m.recommend(ReplicaView(stats, r)) for r, m in enumerate(self._members)]
            return np.asarray(answers)

    Vectorized.__name__ = Vectorized.__qualname__ = f"Vectorized{scalar_cls.__name__}"
    return Vectorized
