"""The exact argmax of an index that grows concavely with an exploration level, computing only
the few entries that can win at each step (KL-UCB, Bayes-UCB).

The index of arm ``i`` of a replica is ``u_i(l)``: a function of the arm's own statistics and
of a level ``l`` shared by all arms of the replica (KL-UCB: ``f(n) = log n + c log log n``;
Bayes-UCB: ``log(1 / tail)``).  The level never decreases, and ``u_i`` is nondecreasing and
concave in it, so an entry last computed at level ``l0`` (its statistics unchanged since) is
bracketed at any ``l >= l0``: from below by its value ``u_i(l0)``, from above by the tangent
``u_i(l0) + u_i'(l0) (l - l0)``.  The arms just observed are computed first (their values
raise the lower bounds); an entry whose upper bound is below the largest lower bound of its
replica cannot be the argmax, and the others (usually one or two leaders, none when the arm
just observed stays ahead) are computed next.  Per step this costs a multiply-add, a max and
a comparison over the ``(R, K)`` bounds, one argmax, and the exact computation of a few
entries per replica, instead of a root or quantile for every entry.

The selection is the exact argmax of the exact indices, not an approximation: every entry
that can reach the largest value is computed at the current level, so the argmax and its
exact ties are among computed entries.  The upper bounds carry a ``slack`` over the stored
values, larger than twice the numerical error of the index computation, so rounding cannot
break this.  An entry whose derivative is 0 is constant from then on (concave and
nondecreasing): its value is exact at every later level and it is not computed again.

Reference path (while :func:`armlab.plugins._fast.reference_paths` is active): every entry
is computed at every selection, then the argmax is taken.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.plugins import _fast
from armlab.plugins._fast.kept_per_arm import KeptPerArm
from armlab.plugins.selection import argmax, random_among_entries
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["LazyArgmax"]

#: ``(rows, flat) -> (value, slope)``: the exact index at flat positions ``flat`` of replicas
#: ``rows`` at the current level, and its derivative with respect to the level there (``inf``
#: where unbounded, e.g. at level 0; exactly 0 only where the index no longer grows).
ValueAndSlope = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class LazyArgmax(KeptPerArm):
    """Lower and tangent upper bounds of every entry, refined on demand; see the module docstring.

    Call :meth:`observed` for the arms whose statistics changed (they are computed at the
    next selection), and :meth:`select` with the current level per replica.  The policy
    decides when this applies (e.g. once every arm is warm and none is eliminated).
    """

    def __init__(self, value_and_slope: ValueAndSlope, replicas: int, n_arms: int, slack: float) -> None:
        self.value_and_slope = value_and_slope
        self.slack = slack
        self.n_arms = n_arms
        size = replicas * n_arms
        self._lower = np.full((replicas, n_arms), -np.inf)  # value when last computed
        self._bound = np.empty((replicas, n_arms))  # upper bounds, then exact where computed
        self._reaches = np.empty((replicas, n_arms), dtype=bool)
        self._flat_lower = self._lower.reshape(-1)
        self._flat_bound = self._bound.reshape(-1)
        self._flat_reaches = self._reaches.reshape(-1)
        self._intercept = np.full((replicas, n_arms), np.inf)  # upper bound = intercept + slope * level
        self._slope = np.zeros((replicas, n_arms))
        self._flat_intercept = self._intercept.reshape(-1)
        self._flat_slope = self._slope.reshape(-1)
        self._constant = np.zeros(size, dtype=bool)  # exact at every later level
        self._fresh = np.zeros(size, dtype=bool)  # computed in this selection's first batch
        self._changed: list[np.ndarray] = []
        self._row_starts = np.arange(replicas) * n_arms

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Forget the entries of arms whose statistics just changed (computed at the next
        :meth:`select`, before anything is compared with them)."""
        self._forget(stats.flat_index(rows, arms))

    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Forget every entry of replicas ``rows``."""
        self._forget((self._row_starts[rows][:, None] + np.arange(self.n_arms)).reshape(-1))

    def _forget(self, flat: np.ndarray) -> None:
        self._flat_intercept[flat] = np.inf
        self._flat_lower[flat] = -np.inf
        self._constant[flat] = False
        self._changed.append(flat)

    def select(
        self, level: np.ndarray, rng: KeyedRandom | None = None, step: np.ndarray | int = 0
    ) -> np.ndarray:
        """Each replica's arm of largest index at ``level`` ``(R,)``; exact ties go to the
        lowest arm, or uniformly at random keyed by ``step`` when ``rng`` is given (the same
        draw as :func:`~armlab.plugins.selection.argmax_random_ties`)."""
        if not _fast.enabled():
            return self._select_by_computing_all(level, rng, step)
        scale = level[0] if level[0] == level[-1] and (level == level[0]).all() else level[:, None]
        bound = self._bound
        np.multiply(self._slope, scale, out=bound)
        np.add(bound, self._intercept, out=bound)
        changed = self._take_changed()
        self._compute(changed, level)
        floor = self._lower.max(axis=1)  # some entry of the row is worth at least this
        np.greater_equal(bound, floor[:, None], out=self._reaches)
        reach = np.flatnonzero(self._flat_reaches)
        self._fresh[changed] = True
        self._compute(reach[~(self._constant[reach] | self._fresh[reach])], level)
        self._fresh[changed] = False
        best = np.argmax(bound, axis=1)  # every entry that reaches the top is exact now
        if rng is not None:
            self._break_ties(best, reach, rng, step)
        return best

    def _select_by_computing_all(self, level: np.ndarray, rng: KeyedRandom | None, step: np.ndarray | int) -> np.ndarray:
        """The reference path: every entry computed at ``level``, then the argmax."""
        self._changed = []
        self._lower[...] = -np.inf
        self._intercept[...] = np.inf
        self._constant[...] = False
        rows = np.repeat(np.arange(self._lower.shape[0]), self.n_arms)
        value, _ = self.value_and_slope(rows, np.arange(rows.size))
        return argmax(value.reshape(self._lower.shape), rng, step)

    def _take_changed(self) -> np.ndarray:
        """Positions forgotten since the last selection, each once."""
        changed = self._changed
        self._changed = []
        if len(changed) == 1:
            return changed[0]  # one batch of unique rows: unique positions
        return np.unique(np.concatenate(changed)) if changed else np.empty(0, dtype=np.int64)

    def _break_ties(self, best: np.ndarray, reach: np.ndarray, rng: KeyedRandom, step: np.ndarray | int) -> None:
        """Draw among exact ties: entries equal to the row's best, all among ``reach``."""
        rows = reach // self.n_arms
        tied = reach[self._flat_bound[reach] == self._flat_bound[self._row_starts + best][rows]]
        rows = tied // self.n_arms
        per_row = np.bincount(rows, minlength=best.size)
        multiple = per_row[rows] > 1
        if multiple.any():
            tied, rows = tied[multiple], rows[multiple]
            best[per_row > 1] = random_among_entries(rows, tied - rows * self.n_arms, rng, step)

    def _compute(self, flat: np.ndarray, level: np.ndarray) -> None:
        """Exact values at ``flat`` (unique positions) into the bounds and lower bounds, and
        their tangents for later selections."""
        if flat.size == 0:
            return
        rows = flat // self.n_arms
        value, slope = self.value_and_slope(rows, flat)
        self._flat_bound[flat] = value
        self._flat_lower[flat] = value
        with np.errstate(invalid="ignore"):
            intercept = value + self.slack - slope * level[rows]
        constant = slope == 0.0
        self._constant[flat] = constant
        finite = np.isfinite(intercept)
        self._flat_intercept[flat] = np.where(constant, value, np.where(finite, intercept, np.inf))
        self._flat_slope[flat] = np.where(finite, slope, 0.0)
