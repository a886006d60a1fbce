"""Vectorized indices of the GapE family (Gabillon, Ghavamzadeh, Lazaric & Bubeck, NeurIPS 2011).

Arms are on the last axis; leading axes are free (``(R, K)`` for one bandit per replica,
``(R, B, K)`` for several), and ``a`` / ``b`` broadcast against them (e.g. ``a[:, None]``).
Definitions: docs/algorithms/fixed-budget.md.

* :func:`empirical_gaps`: GapE's gaps of empirical means -- for the best arm its lead over the
  runner-up, for the others their deficit to the best; for top-m, the GapE-style top-m gaps
  (docs/algorithms/fixed-budget.md), or the greedy-confidence-pursuit paper's gaps to the midpoint of the m-th and (m+1)-th means.
* :func:`gape_index`: ``-gap + b sqrt(a / T)``.
* :func:`gapev_index`: the empirical-Bernstein form ``-gap + sqrt(2 a v / T) + 7 a b / (3 (T - 1))``.
* :func:`agapev_complexity_terms` / :func:`agapev_exploration` / :func:`agapev_index`:
  A-GapE-V, which replaces the oracle complexity by an optimistic online estimate (the
  estimator of Bachman & Precup's implementation, docs/algorithms/fixed-budget.md).

``T`` is the count an arm's width shrinks with; callers pass pulls (observed + pending) so an
arm whose result is in flight is not chosen again and again.  Widths need ``T >= 1``
(GapE) or ``T >= 2`` (the Bernstein forms): callers floor the counts of arms still in warm-up.

:class:`KeptIndex` keeps a policy's per-arm arrays current between steps, so that a step
recomputes only what the last result changed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from armlab.complexity import gaps_to_boundary, mth_largest
from armlab.stats import ArmStats

__all__ = [
    "THETA_V",
    "At",
    "GapStyle",
    "KeptIndex",
    "agapev_arm_terms",
    "agapev_complexity_terms",
    "agapev_exploration",
    "agapev_index",
    "agapev_terms_from",
    "empirical_gaps",
    "gape_index",
    "gape_width",
    "gapev_index",
    "gapev_width",
    "shvar_complexity_scale",
    "gaussian_range_bound",
]

#: GapE-V's constant in ``a = theta (n - 2K) / H`` (both public implementations).
THETA_V = 8.0 / 9.0

#: ``"gape"``: GapE-style gaps (for m = 1 the best-arm gaps); ``"midpoint"``: the greedy-confidence-pursuit paper's gaps
#: to the midpoint between the m-th and (m+1)-th largest means.
GapStyle = Literal["gape", "midpoint"]

#: Where per-arm values are wanted: ``(rows, flat)`` -- replicas and flat positions ``(n,)`` of
#: single arms -- or ``None`` for every arm of every replica.
At = tuple[np.ndarray, np.ndarray] | None


def empirical_gaps(means: np.ndarray, top_m: int = 1, style: GapStyle = "gape") -> np.ndarray:
    """Gaps of the empirical ``means`` for identifying the ``top_m`` best arms."""
    return gaps_to_boundary(means, *_boundary(means, top_m), style)


def _boundary(means: np.ndarray, top_m: int) -> tuple[np.ndarray, np.ndarray]:
    """The m-th and (m+1)-th largest means along the last axis, with a trailing axis of length
    1: both gap styles depend on the means only through them.

    For m = 1 and ``(R, K)`` means a max / argmax pair instead of a partition: the gaps are
    needed at every step of every replica, and the pair is several times cheaper.
    """
    if top_m > 1 or means.ndim != 2:
        return mth_largest(means, top_m)
    rows = np.arange(means.shape[0])
    best_arm = np.argmax(means, axis=1)
    best = means[rows, best_arm]
    others = means.copy()
    others[rows, best_arm] = -np.inf  # the second largest equals the best on a tie
    return best[:, None], others.max(axis=1, keepdims=True)


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


def agapev_arm_terms(variances: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parts of A-GapE-V's complexity terms that do not depend on the gaps: the optimism
    ``sqrt(1 / (2T))`` added to the gap and the pessimistic variance ``v-`` (``counts >= 2``)."""
    return np.sqrt(0.5 / counts), np.maximum(0.0, variances - np.sqrt(2.0 / (counts - 1.0)))


def agapev_complexity_terms(gaps: np.ndarray, variances: np.ndarray, counts: np.ndarray, b=1.0) -> np.ndarray:
    """Per-arm terms ``h`` of A-GapE-V's complexity estimate (``counts >= 2``).

    ``h = (v- + sqrt(v-^2 + (16/3) b D+))^2 / D+^2`` with the optimistic gap
    ``D+ = gap + sqrt(1 / (2T))`` and the pessimistic variance ``v- = max(0, v - sqrt(2/(T-1)))``
    (Bachman & Precup's code plugs this variance bound where GapE-V's complexity has a
    standard deviation; kept for reproduction, docs/algorithms/fixed-budget.md).  Sum them over every arm the
    estimate covers (all bandits of a joint allocation).
    """
    return agapev_terms_from(gaps, *agapev_arm_terms(variances, counts), b)


def agapev_terms_from(gaps, optimism, low_variance, b=1.0) -> np.ndarray:
    """:func:`agapev_complexity_terms` from its per-arm parts (:func:`agapev_arm_terms`), which a
    policy can keep between steps."""
    optimistic_gap = gaps + optimism
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


class KeptIndex:
    """Per-arm arrays of a GapE-family index, kept current between steps.

    ``terms(stats, at)`` gives per-arm terms that depend only on each arm's statistics and
    per-replica constants (widths, variances, ...), as a sequence of arrays at ``at`` (see
    :data:`At`); they are kept stacked, ``(n_terms, R, K)``.  With ``style`` set the gaps
    (for ``top_m``) of the means are kept too -- the observed means, or the term at position
    ``means`` -- and, with ``derive``, so is ``derive(terms, gaps)``: per-arm values built
    from both, e.g. the index ``width - gap``, reading only the first ``derive_reads`` terms
    (default: all).

    With immediate feedback a result changes one arm's statistics, so :meth:`observed`
    recomputes that arm's entries, and all of a replica's gaps and derived values only when
    the result may have moved its m-th or (m+1)-th largest mean, the only means the gaps
    depend on besides the arm's own.  Any other change -- results in flight (a dispatch
    changes pull counts unannounced) or statistics set outside the engine -- shows in a
    replica's dispatched and observed counts, and :meth:`current` then recomputes
    everything; with ``pending`` false (terms of observed statistics only) dispatches change
    nothing, and only the observed counts are watched.  The values always equal a
    recomputation's.
    """

    def __init__(
        self,
        terms: Callable[[ArmStats, At], Sequence[np.ndarray]],
        replicas: int,
        style: GapStyle | None = None,
        derive: Callable[[Sequence[np.ndarray], np.ndarray], np.ndarray] | None = None,
        top_m: int = 1,
        means: int | None = None,
        derive_reads: int | None = None,
        pending: bool = True,
    ) -> None:
        self._terms_at, self._derive, self._style, self._top_m, self._mean_term = terms, derive, style, top_m, means
        self._derive_reads = slice(derive_reads)  # the terms gathered for a replica's refresh
        self._pending = pending
        self.terms = self.gaps = self.derived = np.empty(0)
        self._stamp = np.full((2, replicas), -1, dtype=np.int64)  # dispatched, observed when current

    def current(self, stats: ArmStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(terms, gaps, derived)`` now (kept arrays: read them, do not keep them); ``gaps``
        and ``derived`` are empty without ``style``."""
        stamp = self._stamp
        dispatched = self._dispatched(stats)
        if not self.terms.size or (stamp[0] != dispatched).any() or (stamp[1] != stats.observed).any():
            self.terms = np.stack(np.broadcast_arrays(*self._terms_at(stats, None)))
            if self._style is not None:
                means = self._means_of(stats, self.terms, None)
                self._means = means if self._mean_term is not None else means.copy()  # a view of the term
                self._refresh()
            stamp[0], stamp[1] = dispatched, stats.observed
        return self.terms, self.gaps, self.derived

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Bring the arrays up to date for the results just folded in, where possible."""
        if not self.terms.size:
            return
        stamp_dispatched, stamp_observed = self._stamp  # 1-d rows: [0][rows] is cheaper than [0, rows]
        dispatched, observed = self._dispatched(stats)[rows], stats.observed[rows]
        alone = (stamp_dispatched[rows] + 1 == dispatched) & (stamp_observed[rows] + 1 == observed)
        alone &= dispatched == observed  # nothing in flight: only the observed arm changed
        if not alone.all():
            rows, arms, dispatched, observed = rows[alone], arms[alone], dispatched[alone], observed[alone]
        at = (rows, stats.flat_index(rows, arms))
        terms = self._terms_at(stats, at)
        if self._style is not None:
            old_means = self._means.reshape(-1)[at[1]]  # read first: the means may be a kept term
        for kept, term in zip(self.terms, terms, strict=True):
            kept.reshape(-1)[at[1]] = term
        if self._style is not None:
            self._observe_gaps(at, terms, old_means, self._means_of(stats, terms, at))
        stamp_dispatched[rows], stamp_observed[rows] = dispatched, observed

    def _dispatched(self, stats: ArmStats) -> np.ndarray:
        """The dispatch counts the terms depend on: the observed counts unless ``pending``."""
        return stats.dispatched if self._pending else stats.observed

    def _means_of(self, stats: ArmStats, terms: Sequence[np.ndarray], at: At) -> np.ndarray:
        """The means the gaps are of, at ``at``, given the ``terms`` there."""
        if self._mean_term is not None:
            return terms[self._mean_term]
        return stats.means if at is None else stats.means.reshape(-1)[at[1]]

    def _observe_gaps(self, at: tuple[np.ndarray, np.ndarray], terms: Sequence[np.ndarray], old: np.ndarray,
                      means: np.ndarray) -> None:
        """Gaps and derived values after the means at ``at`` went from ``old`` to ``means`` (and
        the terms there to ``terms``): at those arms, and at every arm of the replicas whose m-th
        or (m+1)-th largest mean moved."""
        rows, flat = at
        if self._mean_term is None:  # else the means were stored with the terms
            self._means.reshape(-1)[flat] = means
        mth, next_one = self._mth[rows], self._next[rows]
        # the m-th and (m+1)-th largest stay put when the arm's old and new means are both
        # above the m-th or both below the (m+1)-th
        moved = ~((np.minimum(old, means) > mth) | (np.maximum(old, means) < next_one))
        n_moved = np.count_nonzero(moved)
        if 4 * n_moved > self._means.shape[0]:  # a pass over all beats gathering
            self._refresh()
            return
        gaps = gaps_to_boundary(means, mth, next_one, self._style)  # wrong where moved: redone below
        self.gaps.reshape(-1)[flat] = gaps
        if self._derive is not None:
            self.derived.reshape(-1)[flat] = self._derive(terms, gaps)
        if n_moved:
            self._refresh(rows[moved])

    def _refresh(self, rows: np.ndarray | None = None) -> None:
        """Recompute the boundary means, gaps and derived values of replicas ``rows`` (all: None)."""
        means = self._means if rows is None else self._means[rows]
        mth, next_one = _boundary(means, self._top_m)
        gaps = gaps_to_boundary(means, mth, next_one, self._style)
        if rows is None:
            self._mth, self._next, self.gaps = mth[:, 0].copy(), next_one[:, 0].copy(), gaps
        else:
            self._mth[rows], self._next[rows], self.gaps[rows] = mth[:, 0], next_one[:, 0], gaps
        if self._derive is not None:
            if rows is None:
                self.derived = self._derive(self.terms, gaps)
            else:  # np.take: several times faster than self.terms[reads, rows]
                self.derived[rows] = self._derive(np.take(self.terms[self._derive_reads], rows, axis=1), gaps)
