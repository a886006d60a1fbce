"""How every index policy turns an index into a pull: the warm-up and the tie-breaking rule.

**Warm-up** (:func:`select_by_index`): each active arm is pulled until it has ``need`` pulls
*dispatched*, lowest arm first, so an arm whose results are in flight is not requested again;
then the active arm of largest index among those with ``need`` observed results.  While no
active arm has ``need`` results yet (all still in flight), the active arm with the fewest
pulls is pulled.

**Ties** (:data:`TIE_BREAK_DEFAULT`): exact ties of the index go to the lowest arm index by
default.  It is deterministic given the statistics, it is what the authors' code behind the
pure-exploration papers does (so their published figures are comparable), and it costs
nothing per step.  ``tie_break = "random"`` draws uniformly among the tied arms, keyed by
(seed, replica, step), so every caller breaking the same tie at the same step draws the same
arm; prefer it on Bernoulli problems whose arms are listed in order of their means, where
indices are often exactly equal early on and lowest-index ties favour the first arms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import Field

from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = [
    "TIE_BREAK_DEFAULT",
    "TieBreak",
    "argmax",
    "argmax_random_ties",
    "random_among",
    "random_among_entries",
    "select_by_index",
    "tie_break_field",
]

TieBreak = Literal["lowest", "random"]

#: The one default of every built-in policy's ``tie_break`` (the module docstring says why).
TIE_BREAK_DEFAULT: TieBreak = "lowest"


def tie_break_field() -> Any:
    """The ``tie_break`` parameter of a policy's Params, with the shared default."""
    return Field(
        TIE_BREAK_DEFAULT,
        description="exact ties of the index: the lowest arm index, or uniformly at random keyed by "
        "(seed, replica, step); see docs/algorithms/index.md",
    )


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
    replica); the draw is keyed by (replica, step, salt).
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


def argmax(index: np.ndarray, rng: KeyedRandom | None, step: np.ndarray | int) -> np.ndarray:
    """Row-wise argmax with the tie rule: lowest index (``rng`` None) or random."""
    return np.argmax(index, axis=1) if rng is None else argmax_random_ties(index, rng, step)


def select_by_index(
    stats: ArmStats,
    index: np.ndarray | Callable[[], np.ndarray],
    need: int = 1,
    rng: KeyedRandom | None = None,
) -> np.ndarray:
    """The warm-up, then the arm of largest ``index`` (module docstring).  Ties go to the
    lowest index, or are random when ``rng`` is given.

    ``index`` may be a function returning the index: it is then called only once some
    replica is past its warm-up.
    """
    pulls = np.where(stats.active, stats.pulls, np.iinfo(np.int64).max)
    fewest = np.argmin(pulls, axis=1)
    warm = pulls[np.arange(stats.replicas), fewest] >= need
    if not warm.any():
        return fewest
    if callable(index):
        index = index()
    usable = (stats.counts >= need) & stats.active
    chosen = argmax(np.where(usable, index, -np.inf), rng, stats.dispatched)
    return np.where(warm & usable.any(axis=1), chosen, fewest)
