"""Exact argmax of an index that grows concavely with an exploration level, computing only a
few entries per step (KL-UCB, Bayes-UCB).

The index of arm ``i`` of a replica is ``u_i(l)``: a function of the arm's own statistics and
of a level ``l`` shared by all arms of the replica (KL-UCB: ``f(n) = log n + c log log n``;
Bayes-UCB: ``log(1 / tail)``).  The level never decreases, and ``u_i`` is nondecreasing and
concave in it, so the tangent at the level ``l0`` where the entry was last computed bounds it
from above: ``u_i(l) <= u_i(l0) + u_i'(l0) (l - l0)`` for ``l >= l0``.  Per step this costs
one multiply-add over the ``(R, K)`` bounds, two argmax passes, and exact computations of a
few entries per replica (the arm just observed, the best bound of the others, and whatever
still reaches it), instead of a root or quantile for every entry.

The selection is the exact argmax of the exact indices, not an approximation: each row's
largest bound is computed exactly, then every entry whose bound still reaches that value; any
other entry's value is below its bound, below the computed value.  The bounds carry a small
``slack`` over the stored values, larger than the numerical error of the index computation,
so rounding cannot break this.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.plugins.policies._index import random_among
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["ConcaveLevelIndex"]

#: ``(rows, flat) -> (value, slope)``: the exact index at flat positions ``flat`` of replicas
#: ``rows`` at the current level, and its derivative with respect to the level there (``inf``
#: where unbounded, e.g. at level 0).
ValueAndSlope = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class ConcaveLevelIndex:
    """Tangent upper bounds of every entry, refined on demand; see the module docstring.

    Call :meth:`invalidate` for the arms whose statistics changed (they are computed first at
    the next selection), and :meth:`select` with the current level per replica.  The policy
    decides when this applies (e.g. once every arm is warm and none is eliminated).
    """

    def __init__(self, value_and_slope: ValueAndSlope, replicas: int, n_arms: int, slack: float) -> None:
        self.value_and_slope = value_and_slope
        self.slack = slack
        self.n_arms = n_arms
        self._intercept = np.full((replicas, n_arms), np.inf)  # no value yet: unbounded
        self._slope = np.zeros((replicas, n_arms))
        self._bound = np.empty((replicas, n_arms))
        self._reaches = np.empty((replicas, n_arms), dtype=bool)
        self._flat_intercept = self._intercept.reshape(-1)
        self._flat_slope = self._slope.reshape(-1)
        self._flat_bound = self._bound.reshape(-1)
        self._flat_reaches = self._reaches.reshape(-1)
        self._exact = np.zeros(replicas * n_arms, dtype=bool)  # computed at this select's level
        self._slot = np.zeros(replicas * n_arms, dtype=np.int64)  # scratch for removing duplicates
        self._changed: list[np.ndarray] = []
        self._computed: list[np.ndarray] = []
        self._all_rows = np.arange(replicas)
        self._row_starts = self._all_rows * n_arms

    def invalidate(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Forget the entries of arms whose statistics just changed (computed at the next
        :meth:`select`, before anything is compared with them)."""
        self._changed.append(stats.flat_index(rows, arms))

    def select(
        self, level: np.ndarray, rng: KeyedRandom | None = None, step: np.ndarray | int = 0
    ) -> np.ndarray:
        """Each replica's arm of largest index at ``level`` ``(R,)``; exact ties go to the
        lowest arm, or uniformly at random keyed by ``step`` when ``rng`` is given (the same
        draw as :func:`~armlab.plugins.policies._index.argmax_random_ties`)."""
        scale = level[0] if level[0] == level[-1] and (level == level[0]).all() else level[:, None]
        np.multiply(self._slope, scale, out=self._bound)
        np.add(self._bound, self._intercept, out=self._bound)
        changed = np.concatenate(self._changed) if self._changed else np.empty(0, dtype=np.int64)
        self._changed.clear()
        self._flat_bound[changed] = -np.inf  # computed below, with the best bound of the others
        leader = self._row_starts + np.argmax(self._bound, axis=1)
        first = self._compute(np.concatenate((changed, leader)), level)
        top = self._flat_bound[leader]
        np.maximum.at(top, changed // self.n_arms, self._flat_bound[changed])
        np.greater_equal(self._bound, top[:, None], out=self._reaches)
        self._flat_reaches[first] = False
        self._compute(np.flatnonzero(self._flat_reaches), level)
        best = np.argmax(self._bound, axis=1)  # every entry that reaches ``top`` is exact now
        if rng is not None:
            self._break_ties(best, rng, step)
        for computed in self._computed:
            self._exact[computed] = False
        self._computed.clear()
        return best

    def _break_ties(self, best: np.ndarray, rng: KeyedRandom, step: np.ndarray | int) -> None:
        """Draw among exact ties; they can only be among the entries computed in this selection."""
        computed = np.concatenate(self._computed)
        rows = computed // self.n_arms
        at_top = self._flat_bound[computed] == self._flat_bound[self._row_starts + best][rows]
        tied_rows = np.flatnonzero(np.bincount(rows[at_top], minlength=best.size) > 1)
        if tied_rows.size:
            sub = self._bound[tied_rows]
            tied = sub == sub[np.arange(tied_rows.size), best[tied_rows], None]
            best[tied_rows] = random_among(tied, tied_rows, rng, step)

    def _compute(self, flat: np.ndarray, level: np.ndarray) -> np.ndarray:
        """Exact values at ``flat`` (those not yet computed in this selection) into its
        bounds, their tangents for later selections; returns the positions computed."""
        flat = flat[~self._exact[flat]]
        if flat.size == 0:
            return flat
        self._exact[flat] = True
        self._slot[flat] = np.arange(flat.size)
        flat = flat[self._slot[flat] == np.arange(flat.size)]  # each entry once
        self._computed.append(flat)
        rows = flat // self.n_arms
        value, slope = self.value_and_slope(rows, flat)
        self._flat_bound[flat] = value
        with np.errstate(invalid="ignore"):
            intercept = value + self.slack - slope * level[rows]
        unbounded = ~np.isfinite(intercept)
        self._flat_intercept[flat] = np.where(unbounded, np.inf, intercept)
        self._flat_slope[flat] = np.where(unbounded, 0.0, slope)
        return flat
