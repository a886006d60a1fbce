"""The one base of every index policy: warm up, then pull the active arm of largest index.

A subclass states its rule as :meth:`IndexPolicy.index`, the index of every arm of every
replica computed from the statistics, in its paper's notation (a thresholding rule that
*minimises* a key returns the key negated).  The base does the rest, the same way for every
family: the warm-up (each active arm pulled until it has ``need`` pulls dispatched, then only
arms with ``need`` observed results compete: :func:`~armlab.plugins.selection.select_by_index`),
the tie rule of the policy's ``tie_break`` parameter (lowest arm by default), and, once every
arm is warm, a plain argmax (:class:`~armlab.plugins._fast.warm_arms.WarmArms`).

A policy whose index is expensive may return it from a helper of :mod:`armlab.plugins._fast`
in :meth:`current_index` (e.g. a :class:`~armlab.plugins._fast.kept_arm_values.KeptArmValues`
that recomputes only the arms just observed); :meth:`index` stays the definition, and the
contract test checks that both choose alike.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import partial
from typing import ClassVar

import numpy as np

from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import Policy
from armlab.plugins.propensity import Propensities, one_hot
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["IndexPolicy"]


class IndexPolicy(Policy):
    """Warm-up, then ``argmax`` of :meth:`index` over the active, warm arms (module docstring)."""

    honours_inactive_arms = True  # it selects among the active arms only

    #: Observed results every arm needs before its index is read (a subclass whose need
    #: depends on its parameters overrides it with a property, e.g. Bayes-UCB: 0 under a
    #: Beta prior, 1 under a Gaussian one).
    need: ClassVar[int] = 1
    #: Whether :meth:`index` is ``-inf`` at inactive arms (a policy that eliminates arms and
    #: says so in its index): then the plain argmax applies once every arm is warm, active or not.
    index_excludes_inactive_arms: ClassVar[bool] = False

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._warm_arms = WarmArms(need=self.need)

    @abstractmethod
    def index(self, stats: ArmStats) -> np.ndarray:
        """The index ``(R, K)`` to maximise; entries of arms still warming up are ignored."""

    def current_index(self, stats: ArmStats) -> np.ndarray:
        """The index now: :meth:`index`, unless a subclass keeps it between steps."""
        return self.index(stats)

    def tie_rng(self) -> KeyedRandom | None:
        """The generator of random ties, or ``None`` for lowest-index ties (``tie_break``)."""
        return self.rng if getattr(self.params, "tie_break", "lowest") == "random" else None

    def propensities(self, stats: ArmStats, chosen: np.ndarray | None = None) -> Propensities:
        """Exact: 1 for the chosen arm with lowest-index ties (deterministic), ``1 / ties`` with
        random ties (the arm is drawn uniformly among the active, warm arms of largest index);
        unknown where the chosen arm is not among the ties this finds (an index kept lazily).
        With ``chosen`` given, lowest-index ties cost one ``(R, K)`` array: no index, no select."""
        chosen = np.asarray(self.select(stats) if chosen is None else chosen, dtype=np.int64)
        if (chosen < 0).any():
            return None, None
        p = one_hot(chosen, stats.n_arms)
        if self.tie_rng() is None:
            return p, None
        pulls = np.where(stats.active, stats.pulls, np.iinfo(np.int64).max)
        warm = pulls.min(axis=1) >= self.need  # else the warm-up's lowest arm of fewest pulls
        usable = (stats.counts >= self.need) & stats.active
        if not (warm & usable.any(axis=1)).any():
            return p, None
        index = np.where(usable, self.current_index(stats), -np.inf)
        ties = usable & (index == index.max(axis=1, keepdims=True))
        random_rows = warm & usable.any(axis=1)
        if not ties[random_rows, chosen[random_rows]].all():
            return None, None
        p[random_rows] = ties[random_rows] / ties[random_rows].sum(axis=1, keepdims=True)
        return p, None

    def select(self, stats: ArmStats) -> np.ndarray:
        """The warm-up's arm, or the arm of largest index (computed only once needed)."""
        return self._warm_arms.select(stats, partial(self.current_index, stats), self.tie_rng(),
                                      self.index_excludes_inactive_arms)
