"""Problem-complexity measures of pure-exploration bandits (oracle inputs and labels).

Several fixed-budget algorithms set their exploration parameter from a complexity computed
from the *true* means (and variances): UCB-E and its thresholding form (``H1``), UCBEV and
GapE-V (``H_sigma,1`` / ``H^sigma``), GapE (``H``), UGapE (``H_epsilon``).  The others
(``H2``, ``H_APT``, ``H_sigma,2``) appear in error bounds and are used to label instances.
Definitions and test vectors: docs/algorithms/fixed-budget.md.

Every function is vectorized over leading axes, with the arms on the last axis: a
``(R, K)`` array of means gives ``(R,)`` complexities (one bandit instance per replica).
A complexity that would divide by a zero gap raises ``ValueError("zero gap ...")`` instead
of returning ``inf`` or NaN.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "best_arm_gaps",
    "gape_complexity",
    "gaps_to_boundary",
    "h1",
    "h2",
    "h_apt",
    "h_epsilon",
    "h_sigma2",
    "midpoint_gaps",
    "mth_largest",
    "tbp_gaps",
    "top_m_gaps",
    "variance_complexity",
]


def _floats(values: ArrayLike) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _require_positive(denominators: np.ndarray, what: str) -> None:
    if np.any(denominators <= 0):
        raise ValueError(
            f"zero gap: {what} divides by a gap that is 0 (an arm exactly at the threshold, or "
            f"tied arms at the top-m boundary); the complexity is infinite for this instance"
        )


def mth_largest(values: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``v_(m)`` and ``v_(m+1)``, the m-th and (m+1)-th largest along the last axis (1-based from
    the top), with a trailing axis of length 1 so they broadcast against the arms.

    One partition at the (m+1)-th largest, then the smallest of the m values above it: numpy's
    partition at two positions costs about three times as much, and these run at every step.
    """
    k = values.shape[-1]
    if not 1 <= m < k:
        raise ValueError(f"m = {m} must satisfy 1 <= m < K = {k}")
    ordered = np.partition(values, k - m - 1, axis=-1)
    return ordered[..., k - m :].min(axis=-1, keepdims=True), ordered[..., k - m - 1 : k - m]


def tbp_gaps(means: ArrayLike, threshold: float) -> np.ndarray:
    """Thresholding gaps ``|mu_i - tau|`` (the thresholding-bandits paper)."""
    return np.abs(_floats(means) - threshold)


def gaps_to_boundary(
    means: np.ndarray, mth: np.ndarray, next_one: np.ndarray, style: Literal["gape", "midpoint"] = "gape"
) -> np.ndarray:
    """Gaps of ``means`` from the m-th and (m+1)-th largest means (broadcast against them):
    :func:`top_m_gaps` (``"gape"``) or :func:`midpoint_gaps` (``"midpoint"``).  The m-th and
    (m+1)-th largest are all the gaps need of the other arms, so a caller that keeps them
    between steps recomputes only the gaps."""
    if style == "midpoint":
        return np.abs(means - (mth + next_one) / 2.0)
    gaps = np.subtract(mth, means)
    # the top arms in place: np.where would compute both differences everywhere (5x slower)
    np.subtract(means, next_one, out=gaps, where=means >= mth)
    return gaps


def top_m_gaps(means: ArrayLike, m: int) -> np.ndarray:
    """Top-m gaps: ``mu_k - mu_(m+1)`` for the m best arms, ``mu_(m) - mu_k`` for the rest."""
    means = _floats(means)
    return gaps_to_boundary(means, *mth_largest(means, m), "gape")


def best_arm_gaps(means: ArrayLike) -> np.ndarray:
    """Best-arm gaps ``mu* - mu_i``; the best arm gets its lead over the runner-up."""
    return top_m_gaps(means, 1)


def midpoint_gaps(means: ArrayLike, m: int) -> np.ndarray:
    """The greedy-confidence-pursuit paper's gaps ``|mu_k - (mu_(m) + mu_(m+1)) / 2|`` to the top-m boundary midpoint."""
    means = _floats(means)
    return gaps_to_boundary(means, *mth_largest(means, m), "midpoint")


def h1(gaps: ArrayLike) -> np.ndarray:
    """``H1 = sum_i gap_i^-2``."""
    gaps = _floats(gaps)
    _require_positive(gaps, "H1")
    return np.sum(gaps**-2.0, axis=-1)


def h2(gaps: ArrayLike) -> np.ndarray:
    """``H2 = max_i i * gap_(i)^-2`` with gaps sorted increasingly (1-based i).

    The thresholding-bandits paper prints ``min``; the max form is the one its inequalities need (docs/algorithms/thresholding.md).
    """
    gaps = np.sort(_floats(gaps), axis=-1)
    _require_positive(gaps, "H2")
    rank = np.arange(1, gaps.shape[-1] + 1)
    return np.max(rank * gaps**-2.0, axis=-1)


def h_apt(means: ArrayLike, threshold: float, epsilon: float) -> np.ndarray:
    """APT's complexity ``sum_i (|mu_i - tau| + epsilon)^-2`` (Locatelli et al. 2016)."""
    widened = tbp_gaps(means, threshold) + epsilon
    _require_positive(widened, "H_APT")
    return np.sum(widened**-2.0, axis=-1)


def _bernstein_numerator(gaps: np.ndarray, variances: ArrayLike, b: float) -> np.ndarray:
    """``sigma_i + sqrt(sigma_i^2 + (16/3) b gap_i)``, the variance-aware gap scale."""
    variances = _floats(variances)
    return np.sqrt(variances) + np.sqrt(variances + (16.0 / 3.0) * b * gaps)


def variance_complexity(
    gaps: ArrayLike, variances: ArrayLike, squared: bool = True, b: float = 1.0
) -> np.ndarray:
    """``sum_i (sigma_i + sqrt(sigma_i^2 + (16/3) b gap_i))^p / gap_i^2`` with p = 2 or 1.

    ``squared=True`` (default) is GapE-V's ``H^sigma`` (Gabillon et al. 2011) and the form
    the thresholding-bandits paper's authors compute; ``squared=False`` is ``H_sigma,1`` exactly as the thresholding-bandits paper
    prints it (docs/algorithms/thresholding.md).  ``b`` bounds the rewards (the thresholding-bandits paper: 1).
    """
    gaps = _floats(gaps)
    _require_positive(gaps, "the variance complexity")
    numerator = _bernstein_numerator(gaps, variances, b)
    if squared:
        numerator = numerator**2
    return np.sum(numerator / gaps**2, axis=-1)


def h_sigma2(gaps: ArrayLike, variances: ArrayLike) -> np.ndarray:
    """The thresholding-bandits paper's ``H_sigma,2 = max_i i / gt_(i)^2`` with
    ``gt_i^2 = gap_i^2 / (sigma_i + sqrt(sigma_i^2 + (16/3) gap_i))`` sorted increasingly."""
    gaps = _floats(gaps)
    _require_positive(gaps, "H_sigma,2")
    scaled = np.sort(gaps**2 / _bernstein_numerator(gaps, variances, 1.0), axis=-1)
    rank = np.arange(1, gaps.shape[-1] + 1)
    return np.max(rank / scaled, axis=-1)


def gape_complexity(gaps: ArrayLike, b: float = 1.0) -> np.ndarray:
    """GapE's ``H = sum_i b^2 / gap_i^2`` (Gabillon et al. 2011, Theorem 1)."""
    return b**2 * h1(gaps)


def h_epsilon(means: ArrayLike, m: int, epsilon: float, b: float = 1.0) -> np.ndarray:
    """UGapE's ``H_epsilon = sum_i b^2 / max((gap_i + epsilon) / 2, epsilon)^2`` (eq. 6),
    with top-m gaps."""
    scale = np.maximum((top_m_gaps(means, m) + epsilon) / 2.0, epsilon)
    _require_positive(scale, "H_epsilon")
    return np.sum(b**2 / scale**2, axis=-1)
