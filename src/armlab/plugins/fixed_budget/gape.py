"""GapE, GapE-V and A-GapE-V (Gabillon, Ghavamzadeh, Lazaric & Bubeck, NeurIPS 2011), one bandit.

Gap-based exploration pulls ``argmax_k B_k`` with ``B_k = -gap_k + width_k``: arms whose
empirical gap is small (hard to tell apart from the boundary of the answer) or whose
estimate is still wide.  The answer is the empirical best arm (or the m empirical best
arms).  Index code lives in :mod:`armlab.plugins.fixed_budget.gape_index`; this module holds
the policies.  Definitions: docs/algorithms/fixed-budget.md.

Extension points (the greedy-confidence-pursuit paper's ``agapev-topm`` subclasses :class:`AGapEV`):

* :meth:`AGapEV.sample_statistics` -- the ``(counts, means, variances)`` the index is built
  from, of every arm or of single arms (override to add prior pseudo-observations), and
  ``pending_in_width`` (whether the width's ``T`` counts pending pulls);
* :meth:`AGapEV.gaps` -- the gap definition (parameter ``gaps``: midpoint or GapE-style);
* class attributes ``init_pulls`` (``r`` in ``a = theta (n - rK) / H``; the budget must
  exceed ``rK``) and ``warmup_observations`` (observations per arm before the index is used:
  0 when pseudo-observations make every count valid from the start);
* :meth:`GapIndexPolicy.index` -- the whole ``(R, K)`` index.

Speed: the widths depend only on each arm's own statistics, and a result moves the gaps of
all arms only when it moves the m-th or (m+1)-th largest mean, so the policies keep their per-arm
arrays between steps (:class:`~armlab.plugins.fixed_budget.gape_index.KeptIndex`) and a
step costs little more than one argmax over the arms.  :meth:`GapIndexPolicy.index` still
recomputes everything.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from functools import partial
from typing import ClassVar

import numpy as np
from pydantic import Field

from armlab.complexity import gape_complexity, top_m_gaps, variance_complexity
from armlab.errors import ConfigError
from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.fixed_budget.gape_index import (
    THETA_V,
    At,
    GapStyle,
    KeptIndex,
    agapev_arm_terms,
    agapev_index,
    agapev_terms_from,
    empirical_gaps,
    gape_index,
    gape_width,
    gapev_index,
    gapev_width,
    gaussian_range_bound,
    shvar_complexity_scale,
)
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.plugins.thresholding._common import (
    OracleIndexParams,
    exploration_parameter,
    require_budget,
)
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["AGapEV", "GapE", "GapEV", "GapIndexPolicy"]


def _width_minus_gap(terms: Sequence[np.ndarray], gaps: np.ndarray) -> np.ndarray:
    """GapE's and GapE-V's index from the width (their only term) and the gap."""
    return terms[0] - gaps


def _variances_at(stats: ArmStats, flat: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """``stats.variances(ddof=1)`` at flat positions (0 with fewer than two observations);
    ``counts``: the observation counts there, if the caller has them."""
    denom = (stats.counts.reshape(-1)[flat] if counts is None else counts) - 1
    out = np.zeros(flat.shape)
    np.divide(stats.m2.reshape(-1)[flat], denom, out=out, where=denom > 0)
    return out


class GapIndexPolicy(Policy):
    """Shared frame: top-m check, budget check, warm-up pulls, then ``argmax`` of :meth:`index`.

    Serves best-arm identification (m = 1) and top-m identification; recommends the
    empirical best arm, or the m arms with the largest empirical means.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    objectives = frozenset({Objective.BEST_ARM, Objective.TOP_M})
    #: ``r`` in the exploration parameter ``theta (n - rK) / H``; the budget must exceed ``rK``.
    init_pulls: ClassVar[int] = 1
    #: Observations every arm needs before the index is used (pulled in index order first).
    warmup_observations: ClassVar[int] = 1

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        self.top_m = problem.top_m if problem.objective is Objective.TOP_M else 1
        if not 1 <= self.top_m < k:
            raise ConfigError(f"{self.name}: top-m needs 1 <= m < K = {k}, got m = {self.top_m}; lower [problem] m")
        r = self.init_pulls
        require_budget(self, problem, r * k, f"{r} initial pull(s) per arm, and a = theta (n - {r}K)/H > 0")
        self._warmup = WarmArms(need=self.warmup_observations)
        self._all_seen = False  # every arm of every replica has a result

    @abstractmethod
    def index(self, stats: ArmStats) -> np.ndarray:
        """The index ``(R, K)`` to maximise (used once the chosen arm is warmed up)."""

    def current_index(self, stats: ArmStats) -> np.ndarray:
        """:meth:`index`, or the same from terms kept between steps (used once every arm of
        every replica has a result; before that most terms change at every step anyway)."""
        return self.index(stats)

    def select(self, stats: ArmStats) -> np.ndarray:
        rng = self.rng if self.params.tie_break == "random" else None
        return self._warmup.select(stats, partial(self._index_now, stats), rng)

    def _index_now(self, stats: ArmStats) -> np.ndarray:
        """The index when it is read (not during the warm-up): from the kept terms once every
        arm of every replica has a result."""
        self._all_seen = self._all_seen or bool(stats.counts.min() > 0)
        return self.current_index(stats) if self._all_seen else self.index(stats)


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
        self._kept = KeptIndex(self.width, replicas, "gape", _width_minus_gap, self.top_m)

    def _scaled_complexity(self, truth: Truth) -> np.ndarray:
        scale = shvar_complexity_scale(self.params.rate, self.problem.n_arms) if self.params.rescale else 1.0
        return scale * self.oracle_complexity(truth, top_m_gaps(truth.means, self.top_m))

    def oracle_complexity(self, truth: Truth, gaps: np.ndarray) -> np.ndarray:
        """``H = sum_k b^2 / Delta_k^2`` per replica (Theorem 1)."""
        return gape_complexity(gaps, b=self.b)

    def index(self, stats: ArmStats) -> np.ndarray:
        gaps = empirical_gaps(stats.means, self.top_m)
        return gape_index(gaps, np.maximum(stats.pulls, 1), self.a[:, None], self.b[:, None])

    def width(self, stats: ArmStats, at: At) -> tuple[np.ndarray]:
        """The width ``b sqrt(a / T)`` (per-arm terms for :class:`KeptIndex`)."""
        if at is None:
            return (gape_width(np.maximum(stats.pulls, 1), self.a[:, None], self.b[:, None]),)
        rows, flat = at
        return (gape_width(np.maximum(stats.pulls_at(flat), 1), self.a[rows], self.b[rows]),)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        return self._kept.current(stats)[2]

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._kept.observed(stats, rows, arms)


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
    warmup_observations = 2

    def oracle_complexity(self, truth: Truth, gaps: np.ndarray) -> np.ndarray:
        """``H^sigma`` per replica (GapE-V's complexity, squared numerator)."""
        return variance_complexity(gaps, truth.variances, squared=True, b=self.b[:, None])

    def index(self, stats: ArmStats) -> np.ndarray:
        gaps = empirical_gaps(stats.means, self.top_m)
        pulls = np.maximum(stats.pulls, 2)
        return gapev_index(gaps, stats.variances(ddof=1), pulls, self.a[:, None], self.b[:, None])

    def width(self, stats: ArmStats, at: At) -> tuple[np.ndarray]:
        """The width ``sqrt(2 a v / T) + 7 a b / (3 (T - 1))`` (per-arm terms for :class:`KeptIndex`)."""
        if at is None:
            return (gapev_width(stats.variances(ddof=1), np.maximum(stats.pulls, 2), self.a[:, None], self.b[:, None]),)
        rows, flat = at
        variances = _variances_at(stats, flat)
        return (gapev_width(variances, np.maximum(stats.pulls_at(flat), 2), self.a[rows], self.b[rows]),)


class AGapEVParams(PluginParams):
    b: float = Field(1.0, gt=0, description="reward range b (rewards in [0, b]); armlab's A-GapE-V uses 1")
    theta: float = Field(THETA_V, gt=0, description="theta in a = theta (n - 2K) / H-hat (8/9)")
    gaps: GapStyle = Field(
        "midpoint",
        description="midpoint: gaps to the midpoint of the m-th and (m+1)-th means (docs/algorithms/fixed-budget.md); "
        "gape: GapE-style top-m gaps (for m = 1, Gabillon et al.'s best-arm gaps)",
    )
    tie_break: TieBreak = tie_break_field()


class AGapEV(GapIndexPolicy):
    """A-GapE-V: GapE-V whose ``a`` is re-estimated at every step from the statistics.

    Source: Gabillon et al. 2011 introduce the adaptive variant without a complete
    definition; the only concrete one is Bachman & Precup's implementation (cited by seed
    003), adopted by armlab: with ``D+ = gap + sqrt(1/(2T))`` and
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
    warmup_observations = 2
    #: Whether the width's ``T`` counts pending pulls (observed + pending) or observations only.
    pending_in_width: ClassVar[bool] = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._kept: KeptIndex | None = None  # built at first use: a subclass may set top_m after reset
        self._buffers = np.empty((2, replicas, problem.n_arms))

    def sample_statistics(self, stats: ArmStats, at: At = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observation counts, means and unbiased variances the index uses, ``(R, K)`` or at
        ``at`` (see :data:`~armlab.plugins.fixed_budget.gape_index.At`); counts are floored at
        2 so the estimator stays finite for arms still in warm-up.  Per arm: each arm's values
        depend only on its own statistics (so that they can be kept between steps)."""
        if at is None:
            return np.maximum(stats.counts, 2.0), stats.means, stats.variances(ddof=1)
        flat = at[1]
        counts = stats.counts.reshape(-1)[flat]
        return np.maximum(counts, 2.0), stats.means.reshape(-1)[flat], _variances_at(stats, flat, counts)

    def gaps(self, means: np.ndarray) -> np.ndarray:
        """Empirical gaps ``(R, K)`` of ``means`` (see the ``gaps`` parameter)."""
        return empirical_gaps(means, self.top_m, self.params.gaps)

    def _width_pulls(self, stats: ArmStats, counts: np.ndarray, at: At = None) -> np.ndarray:
        """The width's ``T`` for :meth:`sample_statistics`' ``counts`` at ``at``."""
        if not self.pending_in_width:
            return counts
        return counts + (stats.pending if at is None else stats.pending.reshape(-1)[at[1]])

    def index(self, stats: ArmStats) -> np.ndarray:
        counts, means, variances = self.sample_statistics(stats)
        return agapev_index(self.gaps(means), variances, counts, self._width_pulls(stats, counts),
                            self.problem.budget, self.params.b, self.params.theta)

    def arm_terms(self, stats: ArmStats, at: At) -> tuple[np.ndarray, ...]:
        """What the index needs of each arm beyond its gap (per-arm terms for :class:`KeptIndex`):
        the complexity's optimism ``sqrt(1/(2T))`` and ``v-``
        (:func:`~armlab.plugins.fixed_budget.gape_index.agapev_arm_terms`), the variance, the
        pulls ``T``, ``3 (T - 1)``, and last the mean the gap is of."""
        counts, means, variances = self.sample_statistics(stats, at)
        pulls = self._width_pulls(stats, counts, at)
        return *agapev_arm_terms(variances, counts), variances, pulls, 3.0 * (pulls - 1.0), means

    def _complexity_terms(self, terms: Sequence[np.ndarray], gaps: np.ndarray) -> np.ndarray:
        """The per-arm terms of ``H-hat`` from :meth:`arm_terms` and the gaps."""
        return agapev_terms_from(gaps, *terms[:2], self.params.b)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        if self._kept is None:
            # gaps are kept only for the built-in gap definitions; they are of the last of
            # arm_terms, and H-hat's terms read its first two
            style = self.params.gaps if type(self).gaps is AGapEV.gaps else None
            self._kept = KeptIndex(self.arm_terms, stats.counts.shape[0], style, self._complexity_terms,
                                   self.top_m, means=-1, derive_reads=2, pending=self.pending_in_width)
        terms, gaps, complexity_terms = self._kept.current(stats)
        if not gaps.size:
            gaps = self.gaps(terms[-1])
            complexity_terms = self._complexity_terms(terms, gaps)
        variances, pulls, bernstein = terms[2:5]
        a = self.params.theta * (self.problem.budget - 2 * gaps.shape[-1]) / complexity_terms.sum(axis=-1)
        a = a[:, None]
        # gapev_index(gaps, variances, pulls, a, b) with 3 (T - 1) kept, in two buffers
        index, extra = self._buffers
        np.sqrt(np.divide(np.multiply(2.0 * a, variances, out=index), pulls, out=index), out=index)
        np.add(index, np.divide(7.0 * a * self.params.b, bernstein, out=extra), out=index)
        return np.subtract(index, gaps, out=index)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        if self._kept is not None:
            self._kept.observed(stats, rows, arms)

