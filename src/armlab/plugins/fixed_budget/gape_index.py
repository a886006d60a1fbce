"""Vectorized indices of the GapE family (Gabillon, Ghavamzadeh, Lazaric & Bubeck, NeurIPS 2011).

Arms are on the last axis; leading axes are free (``(R, K)`` for one bandit per replica,
``(R, B, K)`` for several), and ``a`` / ``b`` broadcast against them (e.g. ``a[:, None]``).
Definitions: docs/algorithms/fixed-budget.md (GapE sections).

* :func:`empirical_gaps`: GapE's gaps of empirical means -- for the best arm its lead over the
  runner-up, for the others their deficit to the best; for top-m, the GapE-style top-m gaps,
  or the greedy-confidence-pursuit paper's gaps to the midpoint of the m-th and (m+1)-th means.
* :func:`gape_width` / :func:`gape_index`: ``b sqrt(a / T)``, and the index ``-gap + b sqrt(a / T)``.
* :func:`gapev_width` / :func:`gapev_index`: the empirical-Bernstein width
  ``sqrt(2 a v / T) + 7 a b / (3 (T - 1))``, and the index ``-gap`` plus that width.
* :func:`agapev_complexity_terms` / :func:`agapev_exploration` / :func:`agapev_index`:
  A-GapE-V, which replaces the oracle complexity by an optimistic online estimate (the
  estimator of Bachman & Precup's implementation, docs/algorithms/fixed-budget.md).

``T`` is the count an arm's width shrinks with; callers pass pulls (observed + pending) so an
arm whose result is in flight is not chosen again and again.  Widths need ``T >= 1``
(GapE) or ``T >= 2`` (the Bernstein forms): callers floor the counts of arms still in warm-up.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from armlab.complexity import gaps_to_boundary, mth_largest

__all__ = [
    "THETA_V",
    "GapStyle",
    "agapev_complexity_terms",
    "agapev_exploration",
    "agapev_index",
    "empirical_gaps",
    "gape_index",
    "gape_width",
    "gapev_index",
    "gapev_width",
    "gaussian_range_bound",
    "shvar_complexity_scale",
]

#: GapE-V's constant in ``a = theta (n - 2K) / H`` (both public implementations).
THETA_V = 8.0 / 9.0

#: ``"gape"``: GapE-style gaps (for m = 1 the best-arm gaps); ``"midpoint"``: the greedy-confidence-pursuit paper's gaps
#: to the midpoint between the m-th and (m+1)-th largest means.
GapStyle = Literal["gape", "midpoint"]


def empirical_gaps(means: np.ndarray, top_m: int = 1, style: GapStyle = "gape") -> np.ndarray:
    """Gaps of the empirical ``means`` for identifying the ``top_m`` best arms: of each mean from
    the m-th and (m+1)-th largest (:func:`~armlab.complexity.gaps_to_boundary`)."""
    return gaps_to_boundary(means, *mth_largest(means, top_m), style)


def gape_width(pulls: np.ndarray, a, b) -> np.ndarray:
    """GapE's confidence width ``b sqrt(a / T)``."""
    return b * np.sqrt(a / pulls)


def gape_index(gaps: np.ndarray, pulls: np.ndarray, a, b) -> np.ndarray:
    """GapE's index ``-gap + b sqrt(a / T)`` (docs/algorithms/fixed-budget.md)."""
    return gape_width(pulls, a, b) - gaps


def gapev_width(variances: np.ndarray, pulls: np.ndarray, a, b) -> np.ndarray:
    """GapE-V's empirical-Bernstein width ``sqrt(2 a v / T) + 7 a b / (3 (T - 1))``; ``T >= 2``."""
    return np.sqrt(2.0 * a * variances / pulls) + 7.0 * a * b / (3.0 * (pulls - 1.0))


def gapev_index(gaps: np.ndarray, variances: np.ndarray, pulls: np.ndarray, a, b) -> np.ndarray:
    """GapE-V's index ``-gap + sqrt(2 a v / T) + 7 a b / (3 (T - 1))`` with the unbiased sample
    variance ``v`` (docs/algorithms/fixed-budget.md); needs ``T >= 2``."""
    return gapev_width(variances, pulls, a, b) - gaps


def agapev_complexity_terms(gaps: np.ndarray, variances: np.ndarray, counts: np.ndarray, b=1.0) -> np.ndarray:
    """Per-arm terms ``h`` of A-GapE-V's complexity estimate (``counts >= 2``).

    ``h = (v- + sqrt(v-^2 + (16/3) b D+))^2 / D+^2`` with the optimistic gap
    ``D+ = gap + sqrt(1 / (2T))`` and the pessimistic variance ``v- = max(0, v - sqrt(2/(T-1)))``
    (Bachman & Precup's code plugs this variance bound where GapE-V's complexity has a
    standard deviation; kept for reproduction, docs/algorithms/fixed-budget.md).  Sum them over every arm the
    estimate covers (all bandits of a joint allocation).
    """
    optimistic_gap = gaps + np.sqrt(0.5 / counts)
    low_variance = np.maximum(0.0, variances - np.sqrt(2.0 / (counts - 1.0)))
    return (low_variance + np.sqrt(low_variance**2 + (16.0 / 3.0) * b * optimistic_gap)) ** 2 / optimistic_gap**2


def agapev_exploration(
    gaps: np.ndarray, variances: np.ndarray, counts: np.ndarray, budget: int, b=1.0, theta: float = THETA_V
) -> np.ndarray:
    """``a = theta (n - 2K) / H`` with ``H`` summed over the last axis (one bandit of K arms)."""
    complexity = agapev_complexity_terms(gaps, variances, counts, b).sum(axis=-1)
    return theta * (budget - 2 * gaps.shape[-1]) / complexity


def agapev_index(
    gaps: np.ndarray,
    variances: np.ndarray,
    counts: np.ndarray,
    pulls: np.ndarray,
    budget: int,
    b=1.0,
    theta: float = THETA_V,
) -> np.ndarray:
    """A-GapE-V's index for one bandit per leading index: GapE-V's index with ``a`` estimated
    from the statistics (``counts`` observations, ``pulls`` in the width; both ``>= 2``)."""
    a = agapev_exploration(gaps, variances, counts, budget, b, theta)[..., None]
    return gapev_index(gaps, variances, pulls, a, b)


def gaussian_range_bound(means: np.ndarray, variances: np.ndarray, budget: int) -> np.ndarray:
    """The heterogeneous-variance paper's reward bound ``b = max_i mu_i + sigma_i sqrt(ln n)`` for GapE / GapE-V: a
    high-probability bound on n Gaussian rewards (true means and variances, last axis arms)."""
    return np.max(means + np.sqrt(variances * math.log(budget)), axis=-1)


def shvar_complexity_scale(rate: float, n_arms: int) -> float:
    """The heterogeneous-variance paper's ``c / c'`` with ``c' = 1 / (4 log2 K)``: GapE / GapE-V's complexity ``H`` is
    replaced by ``H c / c'`` so their error bounds match SHVar's (section 5)."""
    return rate * 4.0 * math.log2(n_arms)
