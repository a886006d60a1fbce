"""EUCBV, Efficient-UCB-Variance (Mukherjee, Naveen, Sudarsanam & Ravindran; seed 001, Alg. 1)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import structlog
from pydantic import Field

from armlab.plugins.regret.base import IndexPolicy, RegretParams
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["EUCBV", "EUCBVSchedule"]

log = structlog.get_logger(__name__)


class EUCBVParams(RegretParams):
    rho: float = Field(0.5, gt=0, description="arm-elimination parameter rho (seed: 1/2, as in Corollary 1)")
    psi: float | None = Field(
        None, gt=0, description="exploration regulatory factor psi; default T / K^2 (the seed's choice)"
    )
    elim_count: Literal["pulls", "round"] = Field(
        "pulls",
        description="counts in the elimination widths: actual pulls z_i (sheet A1, default; the author code) "
        "or the round's nominal n_m (the seed's pseudo-code read literally; for ablations)",
    )
    log_uses: Literal["T", "M"] = Field(
        "T",
        description="log(psi T eps_m) as the seed prints it, or log(psi M eps_m) as in the author code (sheet 2.7)",
    )


def safe_log(x: float) -> float:
    """``log x`` for ``x > 1``, else 0 (sheet A2)."""
    return math.log(x) if x > 1.0 else 0.0


class EUCBVSchedule:
    """The deterministic part of EUCBV for one ``(K, T)``: rounds ``m = 0 .. M + 1``.

    ``eps[m] = 2^-m``; ``n[m] = max(1, ceil(safe_log(psi T eps^2) / (2 eps)))`` pulls per arm;
    ``log_term[m] = safe_log(psi H eps)`` with ``H = T`` (or ``M``); ``clamped`` tells whether
    any logarithm argument was <= 1 (then the clamp of sheet A2 fired).
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
        self.clamped = min(lengths + widths) <= 1.0


class EUCBV(IndexPolicy):
    """EUCBV: UCB-V-style index with a variance-aware elimination test at every step.

    Source: seed 001, Algorithm 1, as read by ALGORITHMS-regret.md section 2.5 (choices
    A1-A9).  Each arm is pulled once; then at decision ``t`` the active arm of largest
    ``mean_j + sqrt(rho (v_j + 2) L_m / (4 N_j))`` is pulled, with ``v_j`` the biased
    empirical variance and ``L_m = log(psi T eps_m)``; after the result, every active arm
    with ``mean_i + w_i < max_j (mean_j - w_j)`` is eliminated (``w`` the same width with
    ``N_i``, or with ``n_m`` when ``elim_count = "round"``).  Round ``m`` ends at time
    ``N_m``; while ``m <= M`` the reset halves ``eps``, sets ``n_{m+1}`` and
    ``N_{m+1} = t + |B| n_{m+1}``; after ``m = M + 1`` everything is frozen and selection and
    elimination go on until ``T`` (A3).  Logarithms of arguments <= 1 are clamped to 0 and
    ``n_m >= 1`` (A2), with one warning.

    Needs the horizon ``T`` (``psi = T / K^2``, ``M``, ``n_m``).  Analysed for rewards in
    [0, 1] with ``T >= K^2.4`` (a warning is logged otherwise); rewards outside [0, 1] are used
    raw and the variance estimate is not clipped (A7).  Pending pulls: rounds are time
    windows over trials *started* (``stats.dispatched``), the index and the elimination use
    observed results only, and eliminations start once ``K + 1`` results are in.
    Eliminated arms are cleared from ``stats.active`` and never pulled again.  Deviation
    from the pseudo-code: ``elim_count = "pulls"`` by default (A1, with evidence there).
    """

    name = "eucbv"
    Params = EUCBVParams
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k, horizon = problem.n_arms, problem.budget
        self.schedule = EUCBVSchedule(k, horizon, self.params)
        if self.schedule.clamped:
            log.warning("eucbv_log_clamped", n_arms=k, horizon=horizon, psi=self.schedule.psi,
                        detail="a logarithm argument is <= 1; clamped to 0 and n_m >= 1 (sheet A2)")
        if horizon < k**2.4:
            log.warning("eucbv_short_horizon", n_arms=k, horizon=horizon,
                        detail="the seed's guarantees assume T >= K^2.4")
        self.round = np.zeros(replicas, dtype=np.int64)
        self.round_end = np.full(replicas, k * int(self.schedule.n[0]), dtype=np.int64)
        self.spread = np.zeros((replicas, k))  # rho (v_i + 2) / 4, per arm
        self.unit_width = np.zeros((replicas, k))  # sqrt(spread / N_i): the width for L_m = 1

    # -- schedule ------------------------------------------------------------------------
    def _advance(self, stats: ArmStats) -> None:
        """Close the round of every replica whose time reached ``N_m`` (while ``m <= M``)."""
        due = (stats.dispatched >= self.round_end) & (self.round <= self.schedule.last)
        rows = np.flatnonzero(due)
        if rows.size:
            self.round[rows] += 1
            survivors = stats.active[rows].sum(axis=1)
            self.round_end[rows] = stats.dispatched[rows] + survivors * self.schedule.n[self.round[rows]]

    def widths(self, rows: np.ndarray | slice) -> np.ndarray:
        """Elimination widths ``sqrt(rho (v + 2) L_m / (4 C))`` of ``rows`` (``C`` per ``elim_count``)."""
        m = self.round[rows]
        if self.params.elim_count == "pulls":
            return self.unit_width[rows] * np.sqrt(self.schedule.log_term[m])[:, None]
        return np.sqrt(self.spread[rows] * (self.schedule.log_term[m] / self.schedule.n[m])[:, None])

    # -- policy --------------------------------------------------------------------------
    def index(self, stats: ArmStats) -> np.ndarray:
        return stats.means + self.unit_width * np.sqrt(self.schedule.log_term[self.round])[:, None]

    def select(self, stats: ArmStats) -> np.ndarray:
        self._advance(stats)
        return super().select(stats)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        var = np.maximum(stats.m2[rows, arms] * self.inv_n[rows, arms], 0.0)
        spread = self.params.rho * (var + 2.0) / 4.0
        self.spread[rows, arms] = spread
        self.unit_width[rows, arms] = np.sqrt(spread) * self.inv_sqrt_n[rows, arms]
        self._eliminate(stats, rows[stats.observed[rows] > stats.n_arms])

    def _eliminate(self, stats: ArmStats, rows: np.ndarray | slice) -> None:
        if rows.size == 0:
            return
        if rows.size == stats.replicas:  # every replica (rows are unique): views, not copies
            rows = slice(None)
        seen = stats.counts[rows] > 0
        width = self.widths(rows)
        means = stats.means[rows]
        active = stats.active[rows]
        best_lower = np.where(active & seen, means - width, -np.inf).max(axis=1)
        upper = np.where(seen, means + width, np.inf)
        stats.active[rows] = active & ~(upper < best_lower[:, None])
