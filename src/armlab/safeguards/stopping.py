"""The anytime stopping rule: stop once the recommended arm beats every other active arm.

With per-arm confidence sequences that hold together at ``1 - delta`` (each arm at
``1 - delta/K``, see :mod:`armlab.safeguards.confidence_sequences`), the recommended arm
``a`` (highest observed mean among the active arms) is declared best when the interval of
``mu_a - mu_j`` lies above 0 for every other active arm ``j``, i.e. ``low_a > high_j``.

Why the error is at most ``delta`` however often one looks: on the event that every sequence
covers its mean at every time (probability ``>= 1 - delta``), stopping with ``a`` means
``mu_a >= low_a > high_j >= mu_j`` for every other active ``j``, so ``a`` is the best active
arm.  The rule works beside any policy, since the sequences are valid under adaptive sampling.
"""

from __future__ import annotations

import numpy as np

__all__ = ["should_stop"]


def should_stop(
    low: np.ndarray, high: np.ndarray, means: np.ndarray, active: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per replica: ``(stop, recommended arm)`` from ``(R, K)`` arrays of the sequences'
    bounds, the observed means and the active-arm mask.

    The recommended arm is the active arm of highest mean (the lowest index on ties); a
    replica with one active arm stops with it (there is nothing left to compare).
    """
    masked = np.where(active, means, -np.inf)
    best = np.argmax(masked, axis=1)
    rows = np.arange(low.shape[0])
    rivals = np.where(active, high, -np.inf)
    rivals[rows, best] = -np.inf
    return low[rows, best] > rivals.max(axis=1), best
