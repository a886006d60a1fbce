"""The greedy-confidence-pursuit paper's completion-cost estimate (eq. 12) of a bandit, and its posterior-sampled form.

Bachman & Precup rank bandits by

    c = sum_j (s_j + sqrt(s_j^2 + (16/3) g_j))^2 / g_j^2,   s_j = sqrt(r_j (1 - r_j)),   (eq. 12)

GapE-V's complexity (Gabillon et al. 2011) with Bernoulli standard deviations, evaluated at
true, MAP or posterior-sampled returns ``r`` and gaps ``g`` (docs/algorithms/greedy-confidence-pursuit.md
section 5.1).  Gaps are floored at 1e-5 so a sampled tie gives a huge but finite cost.  Two gap
conventions occur: Alg. 3 (GCP-Bayes) uses gaps to the *midpoint* between the m-th and
(m+1)-th largest returns; MAP-UCB and Fig. 3 use GapE-style top-m gaps (docs/algorithms/greedy-confidence-pursuit.md).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from armlab.complexity import midpoint_gaps, top_m_gaps, variance_complexity

__all__ = ["GAP_FLOOR", "GapStyle", "completion_cost"]

#: Smallest gap eq. (12) divides by (the authors' floor).
GAP_FLOOR = 1e-5

#: ``"midpoint"``: gaps to the top-m boundary midpoint; ``"gape"``: GapE-style top-m gaps.
GapStyle = Literal["midpoint", "gape"]


def completion_cost(
    returns: ArrayLike, top_m: int, gaps: GapStyle = "midpoint", gap_floor: float = GAP_FLOOR
) -> np.ndarray:
    """Eq. (12) for Bernoulli returns ``(..., K)``: one cost per bandit ``(...)``."""
    returns = np.asarray(returns, dtype=np.float64)
    gap_of = midpoint_gaps if gaps == "midpoint" else top_m_gaps
    floored = np.maximum(gap_of(returns, top_m), gap_floor)
    return variance_complexity(floored, returns * (1.0 - returns))
