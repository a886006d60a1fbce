"""A division where a mask allows it, and a fill value elsewhere, without the mask when it is full."""

from __future__ import annotations

import numpy as np

from armlab.plugins import _fast

__all__ = ["divide_where"]


def divide_where(numerator: np.ndarray, denominator: np.ndarray, where: np.ndarray, fill: float) -> np.ndarray:
    """``numerator / denominator`` where ``where`` holds, ``fill`` elsewhere (float64).

    Reference path: a filled array and a masked division.  Speed path: when ``where`` holds
    everywhere (SHAdaVar's bounds once every arm has enough stage results, its ratios once
    every arm was pulled in the stage), one plain division, the same quotients: SHAdaVar
    recomputes both at every result.
    """
    if _fast.enabled() and np.count_nonzero(where) == where.size:
        return np.divide(numerator, denominator, dtype=np.float64)
    out = np.full(np.shape(where), fill)
    np.divide(numerator, denominator, out=out, where=where)
    return out
