"""The exact argmax of ``mean + sd * z`` over arms, with ``z`` the keyed standard normal draws,
turning only the draws that can win into normals (Gaussian Thompson sampling).

A keyed normal draw is ``ndtri(u)`` of a uniform ``u`` made from 64 random bits
(:meth:`armlab.random.KeyedRandom.normal`).  Its inverse-CDF transform costs more than
everything else of a step at many arms, yet only the largest draw of each replica matters.
The top ``BIN_BITS`` bits of a word tell which of ``2**BIN_BITS`` equal slices of (0, 1) its
uniform lies in, hence between which two quantiles of the normal its draw lies (tabulated
once, widened by a margin far above ``ndtri``'s rounding error).  With ``sd > 0`` the value
``mean + sd * z`` of every arm is bracketed, in floating point too (rounding is monotone), by
the same expression at the slice's two quantiles.  An arm whose upper bound is below the
largest lower bound of its replica cannot be the argmax; the others (a few per replica) get
their exact draw and value, and the first largest of those is the selection.

It is the exact argmax of the exact values, ties included: every arm whose value equals the
maximum has its upper bound at or above every lower bound, so it is among the arms computed
exactly.  Per step this costs a table lookup, two multiply-adds, a max and a comparison
over the ``(R, K)`` words instead of a uniform and an inverse CDF for every entry.

Reference path (while :func:`armlab.plugins._fast.reference_paths` is active): every draw
is made, then the argmax is taken.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy import special

from armlab.plugins import _fast
from armlab.random import KeyedRandom, uniform_from_bits

__all__ = ["BIN_BITS", "argmax_of_normal_draws", "quantile_brackets"]

#: Bits of a word that name its slice of (0, 1): 4096 slices, two 32 KiB tables.
BIN_BITS = 12
#: Widening of the tabulated quantiles: ``ndtri`` is accurate to ~1e-15 relative, and the
#: tabulated quantiles are at most ~3.4 in size, so 1e-9 is far outside its rounding.
_MARGIN = 1e-9


@cache
def quantile_brackets() -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``: for slice ``b``, bounds of ``ndtri(u)`` for every ``u`` in
    ``(b / 2**BIN_BITS, (b + 1) / 2**BIN_BITS)`` (``-inf`` below the first, ``inf`` above the last)."""
    edges = special.ndtri(np.arange(2**BIN_BITS + 1) / 2**BIN_BITS)
    return edges[:-1] - _MARGIN, edges[1:] + _MARGIN


def argmax_of_normal_draws(
    rng: KeyedRandom, step: np.ndarray | int, mean: np.ndarray, sd: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """Per replica, the first arm maximising ``where(active, mean + sd * rng.normal(step, K), -inf)``.

    ``mean``, ``sd`` and ``active`` are ``(R, K)`` arrays over all replicas of ``rng``;
    ``sd`` must be positive and finite.  Returns ``(R,)`` arm indices.
    """
    n_arms = mean.shape[1]
    if not _fast.enabled():
        theta = mean + sd * rng.normal(step, n_arms)
        return np.argmax(np.where(active, theta, -np.inf), axis=1)
    bits = rng.bits(step, n_arms)
    slices = (bits >> np.uint64(64 - BIN_BITS)).view(np.int64)
    lower, upper = quantile_brackets()
    low = np.take(lower, slices)
    np.multiply(low, sd, out=low)
    np.add(low, mean, out=low)
    high = np.take(upper, slices)
    np.multiply(high, sd, out=high)
    np.add(high, mean, out=high)
    if not active.all():
        low[~active] = -np.inf
        high[~active] = -np.inf
    rows, arms = np.nonzero(high >= low.max(axis=1, keepdims=True))
    theta = mean[rows, arms] + sd[rows, arms] * special.ndtri(uniform_from_bits(bits[rows, arms]))
    theta = np.where(active[rows, arms], theta, -np.inf)
    return _first_largest_per_row(rows, arms, theta, mean.shape[0])


def _first_largest_per_row(rows: np.ndarray, arms: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """For entries sorted by row then arm (every row present), the arm of each row's first
    largest value: what ``np.argmax`` returns on the full row."""
    starts = np.searchsorted(rows, np.arange(n_rows))
    largest = np.maximum.reduceat(values, starts)
    winners = np.flatnonzero(values == largest[rows])
    first = np.searchsorted(rows[winners], np.arange(n_rows))
    return arms[winners[first]]
