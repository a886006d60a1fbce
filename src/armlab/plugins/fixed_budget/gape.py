"""GapE, GapE-V and A-GapE-V (Gabillon, Ghavamzadeh, Lazaric & Bubeck, NeurIPS 2011), one bandit.

Gap-based exploration pulls the arm of largest index

    B_k = -gap_k + width_k

an arm whose empirical gap is small (hard to tell apart from the boundary of the answer) or
whose estimate is still wide.  The answer is the empirical best arm (or the m empirical best
arms).  Each policy's :meth:`~GapIndexPolicy.index` states its ``B_k`` from the statistics; the
formulas are in :mod:`armlab.plugins.fixed_budget.gape_index`.  Definitions:
docs/algorithms/fixed-budget.md (GapE sections).

Extension points (the greedy-confidence-pursuit paper's ``agapev-topm`` subclasses :class:`AGapEV`):

* :meth:`AGapEV.sample_statistics`: the observation counts, means and variances the index is
  built from, of every arm or of single arms (override to add prior pseudo-observations);
  ``pending_in_width``: whether the width's ``T`` counts pending pulls;
* :meth:`GapIndexPolicy.gaps`: the gap definition (``gap_style``; A-GapE-V's parameter
  ``gaps``: midpoint or GapE-style); a subclass with its own ``gaps`` is run from its
  :meth:`~GapIndexPolicy.index` at every step (no speed path);
* class attributes ``init_pulls`` (``r`` in ``a = theta (n - rK) / H``; the budget must exceed
  ``rK``) and ``need`` (observed results per arm before its index is read, as for every
  :class:`~armlab.plugins.index_policy.IndexPolicy`: 0 when pseudo-observations make every
  count valid from the start).

Speed path: ``current_index`` computes the same index from per-arm terms and gaps kept
between steps (:class:`~armlab.plugins._fast.gap_terms.GapTerms`), so that a step recomputes
only what the last results changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
from pydantic import Field

from armlab.complexity import gape_complexity, top_m_gaps, variance_complexity
from armlab.errors import ConfigError
from armlab.plugins._fast.gap_terms import EVERY_ARM, Arms, GapTerms
from armlab.plugins.fixed_budget.gape_index import (
    THETA_V,
    GapStyle,
    agapev_complexity_terms,
    empirical_gaps,
    gape_width,
    gapev_width,
    gaussian_range_bound,
    shvar_complexity_scale,
)
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.interfaces import PluginParams
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.plugins.thresholding._common import (
    OracleIndexParams,
    exploration_parameter,
    require_budget,
)
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["AGapEV", "GapE", "GapEV", "GapIndexPolicy", "SampleStatistics"]


class GapIndexPolicy(IndexPolicy):
    """What the GapE family shares: the top-m and budget checks, the gaps, the answer.

    Serves best-arm identification (m = 1) and top-m identification; recommends the
    empirical best arm, or the m arms with the largest empirical means.  Warm-up, ties and
    the argmax are :class:`~armlab.plugins.index_policy.IndexPolicy`'s.
    """

    objectives = frozenset({Objective.BEST_ARM, Objective.TOP_M})
    #: ``r`` in the exploration parameter ``theta (n - rK) / H``; the budget must exceed ``rK``.
    init_pulls: ClassVar[int] = 1
    #: The gaps' definition (:data:`~armlab.plugins.fixed_budget.gape_index.GapStyle`).
    gap_style: GapStyle = "gape"

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        self.top_m = problem.top_m if problem.objective is Objective.TOP_M else 1
        if not 1 <= self.top_m < k:
            raise ConfigError(f"{self.name}: top-m needs 1 <= m < K = {k}, got m = {self.top_m}; lower [problem] m")
        r = self.init_pulls
        require_budget(self, problem, r * k, f"{r} initial pull(s) per arm, and a = theta (n - {r}K)/H > 0")

    def gaps(self, means: np.ndarray) -> np.ndarray:
        """``gap_k`` of every arm ``(R, K)``: of the ``means`` from the m-th and (m+1)-th largest."""
        return empirical_gaps(means, self.top_m, self.gap_style)


class GapEParams(OracleIndexParams):
    b: float | None = Field(
        None, gt=0,
        description="reward range b (rewards in [0, b]); default: the heterogeneous-variance paper's oracle max_i mu_i + sigma_i sqrt(ln n)",
    )
    theta: float = Field(4.0 / 9.0, gt=0, description="theta in the oracle a = theta (n - K) / H (Theorem 1: 4/9)")
    rate: float = Field(1.0 / 144.0, gt=0, description="GapE's error-rate constant c, used by the heterogeneous-variance paper's rescaling")
    rescale: bool = Field(
        True,
        description="the heterogeneous-variance paper's convention: H replaced by H c / c' with c' = 1/(4 log2 K) (docs/algorithms/fixed-budget.md); "
        "false: Gabillon et al.'s a = theta (n - rK) / H (r = 1 for GapE, 2 for GapE-V)",
    )


@dataclass
class WidthTerms:
    """GapE's and GapE-V's per-arm terms for the speed path: the observed means (their gaps
    are ``gap_k``) and the widths ``width_k``."""

    means: np.ndarray
    widths: np.ndarray


class GapE(GapIndexPolicy):
    """GapE: after one pull of each arm, pull ``argmax_k -gap_k + b sqrt(a / T_k)``.

    Source: Gabillon et al., "Multi-bandit best arm identification", NeurIPS 2011 (one bandit,
    M = 1; docs/algorithms/fixed-budget.md), as run by the heterogeneous-variance paper (Lalitha et al., section 5): ``gap_k`` is the empirical
    best arm's lead over the runner-up, and the others' deficit to the best (GapE-style top-m
    gaps for the top-m objective, docs/algorithms/fixed-budget.md); the oracle ``a = theta (n - K) / (H c / c')``
    with ``H = sum_k b^2 / Delta_k^2`` of the true gaps, ``theta = 4/9``, ``c = 1/144``,
    ``c' = 1 / (4 log2 K)``, i.e. ``a = 16 (n - K) / (H log2 K)``, and
    ``b = max_k mu_k + sigma_k sqrt(ln n)``, all per replica from the source's truth (docs/algorithms/fixed-budget.md;
    theta and c are UNVERIFIED against the primary text, docs/algorithms/fixed-budget.md).  Give ``a`` and ``b`` to
    run without oracle inputs (live sources).  Rewards assumed in [0, b]; runs on any rewards.
    With the oracle ``a``, ``b`` cancels from the width: ``b sqrt(a)`` does not depend on it.

    Pending pulls: ``T_k`` counts pulls (observed + pending), gaps use observed means (an
    arm not yet observed has mean 0 there, which only matters while first results are in
    flight).  Ties: lowest index, or random with ``tie_break = "random"``.
    """

    name = "gape"
    Params = GapEParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        p, k = self.params, problem.n_arms
        if p.b is None:
            truth = problem.require_truth(self.name, "means and variances (for the reward bound b)", parameter="b")
            self.b = gaussian_range_bound(truth.means, truth.variances, problem.budget)
        else:
            self.b = np.full(replicas, p.b)
        self.a = exploration_parameter(
            self, problem, replicas, what="means (and variances for GapE-V)", complexity=self._scaled_complexity,
            numerator=p.theta * (problem.budget - self.init_pulls * k),
            formula=f"a = theta (n - {self.init_pulls if self.init_pulls > 1 else ''}K) / H",
        )
        # speed path: the index B_k kept with the widths and gaps
        self._terms = GapTerms(self.arm_terms, top_m=self.top_m, style=self.gap_style,
                               gap_term=lambda terms, gaps: terms.widths - gaps)

    def _scaled_complexity(self, truth: Truth) -> np.ndarray:
        scale = shvar_complexity_scale(self.params.rate, self.problem.n_arms) if self.params.rescale else 1.0
        return scale * self.oracle_complexity(truth, top_m_gaps(truth.means, self.top_m))

    def oracle_complexity(self, truth: Truth, gaps: np.ndarray) -> np.ndarray:
        """``H = sum_k b^2 / Delta_k^2`` per replica (Theorem 1)."""
        return gape_complexity(gaps, b=self.b)

    def index(self, stats: ArmStats) -> np.ndarray:
        """``B_k = -gap_k + b sqrt(a / T_k)``."""
        gaps = self.gaps(stats.means)
        widths = gape_width(np.maximum(stats.pulls, 1), self.a[:, None], self.b[:, None])
        return widths - gaps

    def arm_terms(self, stats: ArmStats, arms: Arms) -> WidthTerms:
        """The speed path's terms of ``arms``: the means and the widths of :meth:`index`."""
        widths = gape_width(np.maximum(arms.pulls(stats), 1), arms.per_replica(self.a), arms.per_replica(self.b))
        return WidthTerms(means=arms.of(stats.means), widths=widths)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        if type(self).gaps is not GapIndexPolicy.gaps:  # gaps of its own: not kept
            return self.index(stats)
        return self._terms.current(stats).gap_terms

    def update(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        self._terms.observed(stats, rows, arms)


class GapEVParams(GapEParams):
    theta: float = Field(
        THETA_V, gt=0, description="theta in the oracle a = theta (n - 2K) / H^sigma (8/9)"
    )
    rate: float = Field(1.0 / 512.0, gt=0, description="GapE-V's error-rate constant c, used by the heterogeneous-variance paper's rescaling")


class GapEV(GapE):
    """GapE-V: GapE with an empirical-Bernstein width, after two pulls of each arm.

    Pulls ``argmax_k -gap_k + sqrt(2 a v_k / T_k) + 7 a b / (3 (T_k - 1))`` (``v_k`` the unbiased
    sample variance).

    Source: Gabillon et al. 2011 (docs/algorithms/fixed-budget.md), as run by the heterogeneous-variance paper: oracle
    ``a = theta (n - 2K) / (H^sigma c / c')`` with
    ``H^sigma = sum_k (sigma_k + sqrt(sigma_k^2 + (16/3) b Delta_k))^2 / Delta_k^2``,
    ``theta = 8/9`` (both public implementations) and ``c = 1/512`` (quoted by the thresholding-bandits
    and heterogeneous-variance papers), i.e. ``a = (1024/9) (n - 2K) / (H^sigma log2 K)``; the pair is UNVERIFIED against the
    primary text (docs/algorithms/fixed-budget.md: with theta = 1/8 the factor would be 16).  ``b`` as in GapE.
    Rewards assumed in [0, b].  Pending pulls: as GapE (``T_k`` counts pulls; means and
    variances are observed ones).
    """

    name = "gapev"
    Params = GapEVParams
    init_pulls = 2
    need = 2

    def oracle_complexity(self, truth: Truth, gaps: np.ndarray) -> np.ndarray:
        """``H^sigma`` per replica (GapE-V's complexity, squared numerator)."""
        return variance_complexity(gaps, truth.variances, squared=True, b=self.b[:, None])

    def index(self, stats: ArmStats) -> np.ndarray:
        """``B_k = -gap_k + sqrt(2 a v_k / T_k) + 7 a b / (3 (T_k - 1))``."""
        gaps = self.gaps(stats.means)
        widths = gapev_width(stats.variances(ddof=1), np.maximum(stats.pulls, 2), self.a[:, None], self.b[:, None])
        return widths - gaps

    def arm_terms(self, stats: ArmStats, arms: Arms) -> WidthTerms:
        """The speed path's terms of ``arms``: the means and the widths of :meth:`index`."""
        widths = gapev_width(arms.sample_variances(stats), np.maximum(arms.pulls(stats), 2),
                             arms.per_replica(self.a), arms.per_replica(self.b))
        return WidthTerms(means=arms.of(stats.means), widths=widths)


class AGapEVParams(PluginParams):
    b: float = Field(1.0, gt=0, description="reward range b (rewards in [0, b]); armlab's A-GapE-V uses 1")
    theta: float = Field(THETA_V, gt=0, description="theta in a = theta (n - 2K) / H-hat (8/9)")
    gaps: GapStyle = Field(
        "midpoint",
        description="midpoint: gaps to the midpoint of the m-th and (m+1)-th means (docs/algorithms/fixed-budget.md); "
        "gape: GapE-style top-m gaps (for m = 1, Gabillon et al.'s best-arm gaps)",
    )
    tie_break: TieBreak = tie_break_field()


class SampleStatistics(NamedTuple):
    """What A-GapE-V reads of each arm (arrays ``(R, K)``, or of single arms)."""

    #: Observation counts ``T`` (as floats), floored at 2 for arms still in warm-up.
    counts: np.ndarray
    #: Means (their gaps are ``gap_k``).
    means: np.ndarray
    #: Unbiased variances ``v``.
    variances: np.ndarray


@dataclass
class AGapEVTerms:
    """A-GapE-V's per-arm terms for the speed path (:meth:`AGapEV.arm_terms`)."""

    means: np.ndarray
    counts: np.ndarray
    variances: np.ndarray
    #: The width's ``T`` (the counts, plus pending pulls if ``pending_in_width``).
    pulls: np.ndarray


class AGapEV(GapIndexPolicy):
    """A-GapE-V: GapE-V whose ``a`` is re-estimated at every step from the statistics.

    Source: Gabillon et al. 2011 introduce the adaptive variant without a complete
    definition; the only concrete one is Bachman & Precup's implementation,
    adopted by armlab: with ``D+ = gap + sqrt(1/(2T))`` and
    ``v- = max(0, v - sqrt(2/(T-1)))``, ``H-hat = sum_k (v- + sqrt(v-^2 + (16/3) b D+))^2 / D+^2``,
    ``a = theta (n - 2K) / H-hat`` and GapE-V's index with that ``a``
    (:func:`~armlab.plugins.fixed_budget.gape_index.agapev_index`).  No oracle input, so it
    runs on live sources.  Gaps default to armlab's midpoint gaps (for one bandit the
    argmax is the same as with GapE-style gaps; ``H-hat`` differs).  Two pulls of each arm first.
    Rewards assumed in [0, b] (b = 1 by default).

    Pending pulls: the width counts pulls (observed + pending); gaps, variances and ``H-hat``
    use observed rewards (arms with fewer than two observations enter ``H-hat`` with ``T = 2``
    and variance 0 while their results are in flight).
    """

    name = "agapev"
    Params = AGapEVParams
    init_pulls = 2
    need = 2
    #: Whether the width's ``T`` counts pending pulls (observed + pending) or observations only.
    pending_in_width: ClassVar[bool] = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._terms: GapTerms[AGapEVTerms] | None = None  # built at first use: a subclass may set top_m after reset

    @property
    def gap_style(self) -> GapStyle:  # type: ignore[override]
        return self.params.gaps

    def sample_statistics(self, stats: ArmStats, arms: Arms = EVERY_ARM) -> SampleStatistics:
        """Observation counts, means and unbiased variances the index uses, of ``arms``.  Each
        arm's values depend only on its own statistics."""
        counts = np.maximum(arms.of(stats.counts), 2.0)
        return SampleStatistics(counts, arms.of(stats.means), arms.sample_variances(stats))

    def width_pulls(self, stats: ArmStats, counts: np.ndarray, arms: Arms = EVERY_ARM) -> np.ndarray:
        """The width's ``T`` of ``arms`` with :meth:`sample_statistics`' ``counts``."""
        return counts + arms.of(stats.pending) if self.pending_in_width else counts

    def index(self, stats: ArmStats) -> np.ndarray:
        """``B_k = -gap_k + sqrt(2 a v_k / T_k) + 7 a b / (3 (T_k - 1))``, ``a = theta (n - 2K) / H-hat``."""
        counts, means, variances = self.sample_statistics(stats)
        gaps = self.gaps(means)
        complexity_terms = agapev_complexity_terms(gaps, variances, counts, self.params.b)  # H-hat = sum_k h_k
        return self.index_from(gaps, complexity_terms, variances, self.width_pulls(stats, counts))

    def index_from(self, gaps: np.ndarray, complexity_terms: np.ndarray, variances: np.ndarray,
                   pulls: np.ndarray) -> np.ndarray:
        """``B_k`` from the gaps, the terms ``h_k`` of ``H-hat = sum_k h_k``, the variances and
        the width's ``T``."""
        k = gaps.shape[-1]
        a = self.params.theta * (self.problem.budget - 2 * k) / complexity_terms.sum(axis=-1)
        return gapev_width(variances, pulls, a[:, None], self.params.b) - gaps

    def arm_terms(self, stats: ArmStats, arms: Arms) -> AGapEVTerms:
        """The speed path's terms of ``arms``: what :meth:`index` reads of them."""
        counts, means, variances = self.sample_statistics(stats, arms)
        return AGapEVTerms(means, counts, variances, self.width_pulls(stats, counts, arms))

    def current_index(self, stats: ArmStats) -> np.ndarray:
        if type(self).gaps is not GapIndexPolicy.gaps:  # gaps of its own: not kept
            return self.index(stats)
        if self._terms is None:
            b = self.params.b
            self._terms = GapTerms(
                self.arm_terms, top_m=self.top_m, style=self.gap_style, reads_pending=self.pending_in_width,
                gap_term=lambda terms, gaps: agapev_complexity_terms(gaps, terms.variances, terms.counts, b),
            )
        kept = self._terms.current(stats)
        return self.index_from(kept.gaps, kept.gap_terms, kept.terms.variances, kept.terms.pulls)

    def update(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        if self._terms is not None:
            self._terms.observed(stats, rows, arms)
