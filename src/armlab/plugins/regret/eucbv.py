"""EUCBV, Efficient-UCB-Variance (Mukherjee, Naveen, Sudarsanam & Ravindran, Alg. 1)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.log import get_logger
from armlab.plugins._fast.elimination_bounds import Bounds, EliminationBounds
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.regret.base import RegretParams, require_budget_for_first_pulls
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["EUCBV", "EUCBVSchedule"]

log = get_logger(__name__)


class EUCBVParams(RegretParams):
    rho: float = Field(0.5, gt=0, description="arm-elimination parameter rho (the EUCBV paper: 1/2, as in Corollary 1)")
    psi: float | None = Field(
        None, gt=0, description="exploration regulatory factor psi; default T / K^2 (the EUCBV paper's choice)"
    )
    elim_count: Literal["pulls", "round"] = Field(
        "pulls",
        description="counts in the elimination widths: actual pulls z_i (docs/algorithms/regret.md, default; the author code) "
        "or the round's nominal n_m (the EUCBV paper's pseudo-code read literally; for ablations)",
    )
    log_uses: Literal["T", "M"] = Field(
        "T",
        description="log(psi T eps_m) as the EUCBV paper prints it, or log(psi M eps_m) as in the author code (docs/algorithms/regret.md)",
    )


def safe_log(x: float) -> float:
    """``log x`` for ``x > 1``, else 0 (docs/algorithms/regret.md)."""
    return math.log(x) if x > 1.0 else 0.0


class EUCBVSchedule:
    """The deterministic part of EUCBV for one ``(K, T)``: rounds ``m = 0 .. M + 1``.

    ``eps[m] = 2^-m``; ``n[m] = max(1, ceil(safe_log(psi T eps^2) / (2 eps)))`` pulls per arm;
    ``log_term[m] = safe_log(psi H eps)`` with ``H = T`` (or ``M``); ``clamped`` tells whether
    any logarithm argument was <= 1 (then the clamp of docs/algorithms/regret.md fired).
    """

    def __init__(self, n_arms: int, horizon: int, params: EUCBVParams) -> None:
        self.psi = params.psi if params.psi is not None else horizon / n_arms**2
        self.last = math.floor(0.5 * math.log2(horizon / math.e))  # M
        rounds = np.arange(max(self.last + 2, 1))
        self.eps = 0.5**rounds
        scale = horizon if params.log_uses == "T" else self.last
        lengths = [self.psi * horizon * e**2 for e in self.eps]
        widths = [self.psi * scale * e for e in self.eps]
        self.n = np.array([max(1, math.ceil(safe_log(x) / (2 * e))) for x, e in zip(lengths, self.eps, strict=True)])
        self.log_term = np.array([safe_log(x) for x in widths])
        self.root_log_term = np.sqrt(self.log_term)
        self.log_per_pull = self.log_term / self.n
        self.clamped = min(lengths + widths) <= 1.0


class EUCBV(IndexPolicy):
    """EUCBV: UCB-V-style index with a variance-aware elimination test after every result.

    Source: the EUCBV paper, Algorithm 1, as read by docs/algorithms/regret.md.  Each arm is
    pulled once; then at decision ``t`` the active arm of largest
    ``mean_j + sqrt(rho (v_j + 2) L_m / (4 N_j))`` is pulled, with ``v_j`` the biased
    empirical variance and ``L_m = log(psi T eps_m)``; after the result, every active arm
    with ``mean_i + w_i < max_j (mean_j - w_j)`` is eliminated (``w`` the same width with
    ``N_i``, or with ``n_m`` when ``elim_count = "round"``).  Round ``m`` ends at time
    ``N_m``; while ``m <= M`` the reset halves ``eps``, sets ``n_{m+1}`` and
    ``N_{m+1} = t + |B| n_{m+1}``; after ``m = M + 1`` everything is frozen and selection and
    elimination go on until ``T``.  Logarithms of arguments <= 1 are clamped to 0 and
    ``n_m >= 1`` with one warning.

    Needs the horizon ``T`` (``psi = T / K^2``, ``M``, ``n_m``).  Analysed for rewards in
    [0, 1] with ``T >= K^2.4`` (a warning is logged otherwise); rewards outside [0, 1] are used
    raw and the variance estimate is not clipped.  Pending pulls: rounds are time
    windows over trials *started* (``stats.dispatched``), the index and the elimination use
    observed results only, and eliminations start once ``K + 1`` results are in.
    Eliminated arms are cleared from ``stats.active`` and never pulled again.  Deviation
    from the pseudo-code: ``elim_count = "pulls"`` by default (A1, with evidence there).

    ``log_uses`` is the paper-versus-authors'-code choice, named as the thresholding
    policies' ``variant`` names theirs: ``"T"`` (default) is the paper's ``L_m =
    log(psi T eps_m)``; ``"M"`` is the authors' public code, ``L_m = log(psi M eps_m)`` with
    ``M = floor(log2(T / e) / 2)``, which gives much narrower widths.
    """

    name = "eucbv"
    Params = EUCBVParams
    objectives = frozenset({Objective.REGRET})
    needs_horizon = True
    index_excludes_inactive_arms = True  # eliminated arms have index -inf

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_budget_for_first_pulls(problem, self.name)
        k, horizon = problem.n_arms, problem.budget
        self.schedule = EUCBVSchedule(k, horizon, self.params)
        if self.schedule.clamped:
            log.warning("eucbv_log_clamped", n_arms=k, horizon=horizon, psi=self.schedule.psi,
                        detail="a logarithm argument is <= 1; clamped to 0 and n_m >= 1 (docs/algorithms/regret.md)")
        if horizon < k**2.4:
            log.warning("eucbv_short_horizon", n_arms=k, horizon=horizon,
                        detail="the EUCBV paper's guarantees assume T >= K^2.4")
        self.round = np.zeros(replicas, dtype=np.int64)  # m
        self.round_end = np.full(replicas, k * int(self.schedule.n[0]), dtype=np.int64)  # N_m
        self._bounds = EliminationBounds(self._bounds_at, replicas, k)

    # -- the paper's quantities, of arms with N pulls, squared deviations m2, in round m -----
    def spread(self, counts: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """``rho (v + 2) / 4``, ``v = m2 / N`` the biased variance."""
        return self.params.rho * (np.maximum(m2 * (1.0 / counts), 0.0) + 2.0) / 4.0

    def bonus(self, spread: np.ndarray, counts: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The index bonus ``sqrt(rho (v + 2) L_m / (4 N))`` (arguments broadcast together)."""
        return np.sqrt(spread) * np.sqrt(1.0 / counts) * self.schedule.root_log_term[m]

    def width(self, spread: np.ndarray, m: np.ndarray, bonus: np.ndarray) -> np.ndarray:
        """The elimination width: the ``bonus``, or ``sqrt(rho (v + 2) L_m / (4 n_m))`` when
        ``elim_count = "round"``."""
        if self.params.elim_count == "pulls":
            return bonus
        return np.sqrt(spread * self.schedule.log_per_pull[m])

    def index(self, stats: ArmStats) -> np.ndarray:
        """``mean_j + sqrt(rho (v_j + 2) L_m / (4 N_j))`` of the active arms, ``-inf`` elsewhere."""
        with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
            index = stats.means + self.bonus(self.spread(stats.counts, stats.m2), stats.counts, self.round[:, None])
        return np.where(stats.active, index, -np.inf)

    # -- the algorithm -----------------------------------------------------------------------
    def _advance(self, stats: ArmStats) -> None:
        """The round reset of every replica whose time reached ``N_m`` (while ``m <= M``)."""
        rows = np.flatnonzero((stats.dispatched >= self.round_end) & (self.round <= self.schedule.last))
        if rows.size:
            m = self.round[rows] + 1
            self.round[rows] = m
            self.round_end[rows] = stats.dispatched[rows] + stats.active[rows].sum(axis=1) * self.schedule.n[m]
            self._bounds.refresh_rows(stats, rows)  # L_m changed every bonus and width

    def select(self, stats: ArmStats) -> np.ndarray:
        self._advance(stats)
        return super().select(stats)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        """The index, ``-inf`` for inactive arms (kept: read it, do not keep it)."""
        return self._bounds.index(stats)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        """After each result, the elimination test of its replica, once ``K + 1`` results are in."""
        self._bounds.observed(stats, rows, arms)
        rows = self._bounds.may_remove(rows[stats.observed[rows] > stats.n_arms])
        if rows.size:
            self._eliminate(stats, rows)

    def _eliminate(self, stats: ArmStats, rows: np.ndarray) -> None:
        """The elimination test of replicas ``rows`` (unique): every active arm with
        ``mean_i + w_i < max_j (mean_j - w_j)`` (over the active arms with a result) is removed."""
        bounds = self._bounds.bounds(stats, rows)  # mean -+ w; -inf, +inf for inactive arms
        removed = bounds.upper < bounds.lower.max(axis=1)[:, None]
        stats.active[rows] &= ~removed
        self._bounds.tested(stats, rows, removed)

    def _bounds_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> Bounds:
        """The index ``mean + bonus`` and the bounds ``mean -+ width`` at flat positions ``flat``
        of replicas ``rows``; ``-inf``, ``-inf``, ``+inf`` for inactive arms and arms without a result."""
        counts, means, m2 = (values.reshape(-1)[flat] for values in (stats.counts, stats.means, stats.m2))
        live = stats.active.reshape(-1)[flat] & (counts > 0)
        m = self.round[rows]
        with np.errstate(divide="ignore", invalid="ignore"):  # arms without a result: replaced below
            spread = self.spread(counts, m2)
            bonus = self.bonus(spread, counts, m)
            width = self.width(spread, m, bonus)
        return Bounds(np.where(live, means + bonus, -np.inf), np.where(live, means - width, -np.inf),
                      np.where(live, means + width, np.inf))
