"""Skip the warm-up's masks once every arm is warm (index policies)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.plugins import _fast
from armlab.plugins.selection import argmax, select_by_index
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["WarmArms"]


class WarmArms:
    """:func:`~armlab.plugins.selection.select_by_index`, as a plain argmax once every arm of
    every replica has ``need`` observed results and is active.

    Counts never decrease, so once all arms are warm they stay warm, and the warm-up's
    ``where``/``argmin`` passes over ``(R, K)`` are skipped for the rest of the run: the hot
    path of UCB-type policies.  Arms made inactive by someone else send it back to the masked
    path.  Reference path: :func:`select_by_index` at every step.
    """

    def __init__(self, need: int = 1) -> None:
        self.need = need
        self._all_warm = False

    def all_warm(self, stats: ArmStats) -> bool:
        """Whether every arm of every replica has ``need`` observed results (active or not).
        Reference path: always ``False``, so callers take the masked warm-up path."""
        if not _fast.enabled():
            return False
        if not self._all_warm:
            self._all_warm = bool(stats.counts.min() >= self.need)
        return self._all_warm

    def ready(self, stats: ArmStats) -> bool:
        """Whether a plain argmax applies: every arm of every replica warm and active."""
        return self.all_warm(stats) and bool(stats.active.all())

    def select(
        self,
        stats: ArmStats,
        index: np.ndarray | Callable[[], np.ndarray],
        rng: KeyedRandom | None = None,
        inactive_at_minus_inf: bool = False,
    ) -> np.ndarray:
        """The selection of :func:`select_by_index` (``index`` an array or a function returning it).

        ``inactive_at_minus_inf``: the index is already ``-inf`` at inactive arms, so the plain
        argmax also applies once some arms are inactive (an eliminating policy)."""
        if self.all_warm(stats) if inactive_at_minus_inf else self.ready(stats):
            return argmax(index() if callable(index) else index, rng, stats.dispatched)
        return select_by_index(stats, index, self.need, rng)
