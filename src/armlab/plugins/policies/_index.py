"""Shared selection helpers for index policies (pending-aware initialisation, ties)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "ArmwiseIndex",
    "IndexWarmup",
    "argmax_random_ties",
    "random_among",
    "random_among_entries",
    "select_by_index",
]


def argmax_random_ties(
    index: np.ndarray, rng: KeyedRandom, step: np.ndarray | int, salt: int = 0
) -> np.ndarray:
    """Row-wise argmax; exact ties broken uniformly at random, keyed by (replica, step)."""
    best = np.argmax(index, axis=1)
    top = index[np.arange(index.shape[0]), best]
    tied_rows = np.flatnonzero((index == top[:, None]).sum(axis=1) > 1)
    if tied_rows.size:
        best[tied_rows] = random_among(index[tied_rows] == top[tied_rows, None], tied_rows, rng, step, salt)
    return best


def random_among(
    tied: np.ndarray, rows: np.ndarray, rng: KeyedRandom, step: np.ndarray | int, salt: int = 0
) -> np.ndarray:
    """One of the ``True`` columns of each row of ``tied``, uniformly at random.

    ``rows`` are the positions of ``tied``'s rows among the policy's replicas (strictly
    ascending; every row of ``tied`` has a ``True``), ``step`` the step (scalar, or per
    replica); the draw is keyed by (replica, step, salt), so every caller breaking the same tie
    at the same step gets the same arm.
    """
    at, cols = np.nonzero(tied)
    return random_among_entries(rows[at], cols, rng, step, salt)


def random_among_entries(
    rows: np.ndarray, cols: np.ndarray, rng: KeyedRandom, step: np.ndarray | int, salt: int = 0
) -> np.ndarray:
    """:func:`random_among` given the tied entries as ``(rows, cols)`` pairs sorted by row,
    then column: one column per distinct row, in row order.

    Entry ``(r, c)`` draws the uniform that column ``c`` of the dense draw ``rng.uniform(2 step +
    salt, K)`` has in replica ``r``, computed for the tied entries only; the largest wins, the
    lowest column on an exact tie of draws.
    """
    steps = step if np.ndim(step) == 0 else np.asarray(step)[rows]
    noise = rng.uniform_at(steps * 2 + salt, rows, cols)
    new_row = np.ones(rows.size, dtype=bool)
    np.not_equal(rows[1:], rows[:-1], out=new_row[1:])
    group = np.cumsum(new_row) - 1
    top = np.maximum.reduceat(noise, np.flatnonzero(new_row))
    winners = np.flatnonzero(noise == top[group])
    first = np.ones(winners.size, dtype=bool)
    np.not_equal(group[winners[1:]], group[winners[:-1]], out=first[1:])
    return cols[winners[first]]


def select_by_index(
    stats: ArmStats,
    index: np.ndarray | Callable[[], np.ndarray],
    need: int = 1,
    rng: KeyedRandom | None = None,
) -> np.ndarray:
    """Arm of largest ``index`` among active arms with at least ``need`` observations.

    Before that, each active arm is pulled until it has ``need`` pulls *dispatched* (lowest
    index first), so pending results are not re-requested.  If no active arm has ``need``
    observations yet (results still in flight), the active arm with the fewest pulls is
    chosen.  Ties go to the lowest index, or are random when ``rng`` is given.

    ``index`` may be a function returning the index: it is then called only once some
    replica is past its warm-up (with many arms the warm-up is a long run of steps that never
    read the index).
    """
    pulls = np.where(stats.active, stats.pulls, np.iinfo(np.int64).max)
    fewest = np.argmin(pulls, axis=1)
    warm = pulls[np.arange(stats.replicas), fewest] >= need
    if not warm.any():
        return fewest
    if callable(index):
        index = index()
    usable = (stats.counts >= need) & stats.active
    masked = np.where(usable, index, -np.inf)
    chosen = np.argmax(masked, axis=1) if rng is None else argmax_random_ties(masked, rng, stats.dispatched)
    return np.where(warm & usable.any(axis=1), chosen, fewest)


class IndexWarmup:
    """Remembers when every arm of every replica has ``need`` observations.

    From then on (counts never decrease) an index policy that does not eliminate arms can
    take a plain argmax, skipping :func:`select_by_index`'s masks: the hot path of UCB-type
    policies.  Arms made inactive by someone else send it back to the masked path.
    """

    def __init__(self, need: int = 1) -> None:
        self.need = need
        self.done = False

    def ready(self, stats: ArmStats) -> bool:
        """Whether every arm of every replica is warm and active: a plain argmax applies."""
        if not self.done:
            self.done = bool(stats.counts.min() >= self.need)
        return self.done and bool(stats.active.all())

    def select(
        self, stats: ArmStats, index: np.ndarray | Callable[[], np.ndarray], rng: KeyedRandom | None = None
    ) -> np.ndarray:
        """:func:`select_by_index` (``index`` an array or a function returning it), with the
        masks skipped once warm."""
        if self.ready(stats):
            if callable(index):
                index = index()
            return np.argmax(index, axis=1) if rng is None else argmax_random_ties(index, rng, stats.dispatched)
        return select_by_index(stats, index, self.need, rng)


IndexAt = Callable[[ArmStats, np.ndarray, np.ndarray], np.ndarray]


class ArmwiseIndex:
    """An index whose value for an arm depends only on that arm's statistics, kept current
    by recomputing just the arms observed since the last step.

    ``index_at(stats, rows, flat)`` returns the index at flat positions ``flat`` of replicas
    ``rows`` (1-d arrays; constants per replica are looked up by ``rows``).  While no trial is
    pending, :meth:`current` costs nothing and :meth:`observed` is O(R) per step, instead of
    several passes over all ``R x K`` entries.  With results in flight a dispatch changes an
    arm's pull count without telling the policy, so then the whole index is recomputed.
    """

    def __init__(self, index_at: IndexAt, replicas: int, n_arms: int) -> None:
        self.index_at = index_at
        self._index = np.empty((replicas, n_arms))
        self._flat = self._index.reshape(-1)
        self._all_rows = np.repeat(np.arange(replicas), n_arms)
        self._all_flat = np.arange(replicas * n_arms)
        self._fresh = False

    def compute(self, stats: ArmStats) -> np.ndarray:
        """The whole index ``(R, K)``, recomputed (a new array)."""
        return self.index_at(stats, self._all_rows, self._all_flat).reshape(self._index.shape)

    def current(self, stats: ArmStats) -> np.ndarray:
        """The index now (the cached array: read it, do not keep it)."""
        if not self._fresh or (stats.dispatched != stats.observed).any():
            self._index[...] = self.compute(stats)
            self._fresh = True
        return self._index

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Recompute the entries of arms whose results were just folded into ``stats``."""
        flat = stats.flat_index(rows, arms)
        self._flat[flat] = self.index_at(stats, rows, flat)

    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Recompute every arm of replicas ``rows`` (after a change of their constants)."""
        if rows.size:
            k = stats.n_arms
            flat = (rows[:, None] * k + np.arange(k)).reshape(-1)
            self._flat[flat] = self.index_at(stats, np.repeat(rows, k), flat)
