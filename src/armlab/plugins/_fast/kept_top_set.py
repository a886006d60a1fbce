"""The arms of largest value of every replica, kept from one step to the next instead of
recomputed (the top-m sets of the fixed-confidence rules: LUCB1's High, UGapE's J and the arms
of largest upper bound)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from armlab.plugins import _fast

__all__ = ["KeptTopSet", "TopIds", "TopSet"]

#: ``(values, size) -> ids``: the definition of the set, ids ``(n, size)`` (ascending) of the
#: ``size`` largest values of each row of ``values`` ``(n, K)``, exact ties to the lower index.
TopIds = Callable[[np.ndarray, int], np.ndarray]


class TopSet(NamedTuple):
    """A set of arms per replica, members down and replicas across: each array is
    ``(size, n)``, so that per-replica values broadcast along the contiguous axis and the
    reductions over the members run across all replicas at once."""

    ids: np.ndarray  #: ``(size, n)`` the members of each replica's set, ascending down a column
    values: np.ndarray  #: ``(size, n)`` their values


class KeptTopSet:
    """Per replica, the ``size`` arms of largest value, exact ties to the lower index:
    ``top(values, size)``, kept from one call to the next.

    Values move little from one step to the next (one or two arms per replica, or all by a
    similar amount), so the set of the last call usually still holds.  :meth:`largest` checks
    it in one pass over the arms: the first arm outside the set in the order (largest value,
    then lowest id) against the last member (smallest value, then highest id).  Where the check
    fails, that outsider takes the last member's place, which is the whole repair when one arm
    crossed the boundary; the replicas still wrong after that are recomputed by ``top``.  This
    replaces a partition of every replica's values at every step: LUCB1's High this way makes
    LUCB1 about 1.85 times as fast (K = 100 arms, m = 10, 500 replicas); the swap before
    recomputing gains about 1.1 times on LUCB1 and UGapEb and 1.2 on UGapEc, whose upper bounds
    all move at every step.  Reference path: ``top`` in every replica at every call.
    """

    def __init__(self, top: TopIds, replicas: int, n_arms: int, size: int) -> None:
        self.top = top
        self.size = size
        self._ids = np.zeros((size, replicas), dtype=np.int64)
        self._penalty = np.zeros((replicas, n_arms))  # -inf at the members, 0 elsewhere
        self._built = np.zeros(replicas, dtype=bool)
        self._all_built = False
        self._offsets = np.arange(0, replicas * n_arms, n_arms)  # flat position of each arm 0

    def largest(self, values: np.ndarray, rows: np.ndarray) -> TopSet:
        """The sets of replicas ``rows`` (ascending), made right for ``values`` ``(len(rows), K)``
        (read the arrays returned, do not keep them)."""
        every = rows.size == self._built.size
        if not _fast.enabled():
            self._set(rows, self.top(values, self.size))
        elif not self._all_built:
            fresh = np.flatnonzero(~self._built[rows])
            if fresh.size:
                self._set(rows[fresh], self.top(values[fresh], self.size))
            self._all_built = bool(self._built.all())
        ids = self._ids if every else self._ids[:, rows]
        inside = self._at(values, ids)
        if not _fast.enabled():
            return TopSet(ids, inside)
        best, best_value = self._first_outside(values, rows)
        wrong = self._wrong(inside, ids, best, best_value)
        if wrong.size:  # the first outsider takes the last member's place
            swapped = rows[wrong]
            last = self.size - 1 - np.argmin(inside[::-1, wrong], axis=0)  # smallest, highest id
            self._penalty[swapped, ids[last, wrong]] = 0.0
            self._penalty[swapped, best[wrong]] = -np.inf
            ids[last, wrong] = best[wrong]
            ids[:, wrong] = np.sort(ids[:, wrong], axis=0)
            inside[:, wrong] = self._at(values[wrong], ids[:, wrong])
            best, best_value = self._first_outside(values[wrong], swapped)
            still = wrong[self._wrong(inside[:, wrong], ids[:, wrong], best, best_value)]
            if still.size:
                self._set(rows[still], self.top(values[still], self.size))
                ids[:, still] = self._ids[:, rows[still]]
                inside[:, still] = self._at(values[still], ids[:, still])
            if not every:
                self._ids[:, swapped] = ids[:, wrong]
        return TopSet(ids, inside)

    def outside(self, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``values`` ``(len(rows), K)`` of replicas ``rows`` with ``-inf`` at the members of
        their sets (as last made right by :meth:`largest`)."""
        return values + (self._penalty if rows.size == self._built.size else self._penalty[rows])

    def _set(self, rows: np.ndarray, ids: np.ndarray) -> None:
        """Make ``ids`` ``(len(rows), size)`` the sets of replicas ``rows``."""
        self._ids[:, rows] = ids.T
        self._penalty[rows] = 0.0
        self._penalty[rows[:, None], ids] = -np.inf
        self._built[rows] = True

    def _at(self, values: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``values[r, ids[:, r]]`` down each column ``r``: the members' values ``(size, n)``."""
        return values.reshape(-1).take(ids + self._offsets[: values.shape[0]])

    def _first_outside(self, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the first arm outside the set in the order (largest value, then lowest id)
        and its value (``-inf`` where every arm is inside)."""
        outside = self.outside(values, rows)
        best = np.argmax(outside, axis=1)
        return best, outside.reshape(-1).take(best + self._offsets[: rows.size])

    def _wrong(self, inside: np.ndarray, ids: np.ndarray, best: np.ndarray, best_value: np.ndarray) -> np.ndarray:
        """The replicas (columns) where the first outsider ``best`` (of value ``best_value``)
        must come in: it beats a member, or ties one of a higher id."""
        beaten = (inside < best_value) | ((inside == best_value) & (ids > best))
        return np.flatnonzero(beaten.any(axis=0))
