"""A function of an arm's count and of a level shared by its replica's arms, read from a table
by count while every replica has the same level (LUCB1's and UGapEc's widths)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.plugins import _fast

__all__ = ["LookupByCountAtLevel", "OfCount"]

#: ``(counts, level) -> values``: elementwise in the two, broadcasting (counts ``(n, K)`` with
#: levels ``(n, 1)``, or counts ``(c,)`` with one level).
OfCount = Callable[[np.ndarray, np.ndarray], np.ndarray]


class LookupByCountAtLevel:
    """``of_count(counts, level)`` for every arm of replicas with levels ``level`` ``(n,)``
    (LUCB1's round ``t``, UGapEc's observed total ``t - 1``).

    Where every replica has the same level (all of them without delays), the values are a
    function of the count alone: they are computed once for each count up to the largest and
    looked up, one gather over the ``n x K`` arms instead of a division and a square root (as
    :class:`~armlab.plugins._fast.lookup_by_count.LookupByCount` does for a function of the
    count alone; here the level moves at every step, so the table is made at every call).
    This makes LUCB1 about 1.2 and UGapEc about 1.05 times as fast (K = 100 arms, 500 replicas).
    Reference path: ``of_count(counts, level[:, None])``.
    """

    def __init__(self, of_count: OfCount) -> None:
        self.of_count = of_count

    def values(self, counts: np.ndarray, level: np.ndarray) -> np.ndarray:
        """``of_count`` at ``counts`` ``(n, K)`` with level ``level[r]`` in row ``r``."""
        if _fast.enabled() and (level == level[0]).all():
            with np.errstate(divide="ignore"):  # count 0 is in the table but never looked up
                table = self.of_count(np.arange(counts.max() + 1), level[0])
            return np.take(table, counts)
        return self.of_count(counts, level[:, None])
