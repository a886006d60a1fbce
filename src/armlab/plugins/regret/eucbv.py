"""EUCBV, Efficient-UCB-Variance (Mukherjee, Naveen, Sudarsanam & Ravindran, Alg. 1)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.log import get_logger
from armlab.plugins.regret.base import IndexPolicy, RegretParams
from armlab.plugins.selection import argmax_random_ties, select_by_index
from armlab.problem import Problem
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
        self.clamped = min(lengths + widths) <= 1.0


class EUCBV(IndexPolicy):
    """EUCBV: UCB-V-style index with a variance-aware elimination test at every step.

    Source: the EUCBV paper, Algorithm 1, as read by docs/algorithms/regret.md.  Each arm is pulled once; then at decision ``t`` the active arm of largest
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

    Speed: an arm's index and confidence bounds change only when it is observed, eliminated,
    or when its replica's round changes, so they are cached ``(R, K)`` and recomputed just
    there (eliminated and unobserved arms hold -inf, so once every arm has a result the
    selection is a plain argmax).  Per replica, an upper bound on the best lower bound and a
    lower bound on the smallest upper bound are kept with O(1) work per result; only where
    they cross is the exact elimination test run over the replica's arms.
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
                        detail="a logarithm argument is <= 1; clamped to 0 and n_m >= 1 (docs/algorithms/regret.md)")
        if horizon < k**2.4:
            log.warning("eucbv_short_horizon", n_arms=k, horizon=horizon,
                        detail="the EUCBV paper's guarantees assume T >= K^2.4")
        self.round = np.zeros(replicas, dtype=np.int64)
        self.round_end = np.full(replicas, k * int(self.schedule.n[0]), dtype=np.int64)
        self.spread = np.zeros((replicas, k))  # rho (v_i + 2) / 4, per arm
        self.unit_width = np.zeros((replicas, k))  # sqrt(spread / N_i): the width for L_m = 1
        self._root_log = np.sqrt(self.schedule.log_term)  # sqrt(L_m), per round
        self._log_per_pull = self.schedule.log_term / self.schedule.n  # L_m / n_m, per round
        self._row_root = np.full(replicas, self._root_log[0])  # sqrt(L_m) of each replica's round
        self._row_per_pull = np.full(replicas, self._log_per_pull[0])  # L_m / n_m of each replica's round
        self._next_end = int(self.round_end[0])  # earliest N_m of a replica still in the schedule
        # active observed arms: index, mean - width, mean + width; the others -inf, -inf, +inf
        self._index = np.full((replicas, k), -np.inf)
        self._lower = np.full((replicas, k), -np.inf)
        self._upper = np.full((replicas, k), np.inf)
        self._lower_ceiling = np.full(replicas, -np.inf)  # >= the largest lower bound of each replica
        self._upper_floor = np.full(replicas, np.inf)  # <= the smallest upper bound of each replica
        self._all_seen = False

    # -- schedule ------------------------------------------------------------------------
    def _advance(self, stats: ArmStats) -> None:
        """Close the round of every replica whose time reached ``N_m`` (while ``m <= M``)."""
        if stats.dispatched.max() < self._next_end:
            return
        scheduled = self.round <= self.schedule.last
        rows = np.flatnonzero((stats.dispatched >= self.round_end) & scheduled)
        if rows.size:
            m = self.round[rows] + 1
            self.round[rows] = m
            survivors = stats.active[rows].sum(axis=1)
            self.round_end[rows] = stats.dispatched[rows] + survivors * self.schedule.n[m]
            self._row_root[rows] = self._root_log[m]
            self._row_per_pull[rows] = self._log_per_pull[m]
            every, flat = self._row_entries(rows)
            live = stats.active.reshape(-1)[flat] & (stats.counts.reshape(-1)[flat] > 0)
            self._refresh(stats, every, flat, live)
            self._lower_ceiling[rows] = np.inf  # unknown: the next test recomputes them
            self._upper_floor[rows] = -np.inf
            scheduled = self.round <= self.schedule.last
        self._next_end = int(self.round_end[scheduled].min()) if scheduled.any() else np.iinfo(np.int64).max

    def _row_entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every arm of replicas ``rows``: their rows and flat positions, row by row."""
        k = self.problem.n_arms
        return np.repeat(rows, k), (rows[:, None] * k + np.arange(k)).reshape(-1)

    def _bonus_and_width(self, rows: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """At flat positions of replicas ``rows``: the index bonus ``sqrt(rho (v + 2) L_m / (4 N))``
        and the elimination width (the same, or with ``n_m`` in place of ``N`` per ``elim_count``)."""
        bonus = self.unit_width.reshape(-1)[flat] * self._row_root[rows]
        if self.params.elim_count == "pulls":
            return bonus, bonus
        return bonus, np.sqrt(self.spread.reshape(-1)[flat] * self._row_per_pull[rows])

    def widths(self, rows: np.ndarray) -> np.ndarray:
        """Elimination widths ``sqrt(rho (v + 2) L_m / (4 C))`` of ``rows`` (``C`` per ``elim_count``)."""
        return self._bonus_and_width(*self._row_entries(rows))[1].reshape(rows.size, -1)

    def _refresh(
        self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray, live: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Recompute the cached index and bounds at flat positions of replicas ``rows``
        (``live``: the arm is active and observed); return the lower and upper bounds there."""
        means = stats.means.reshape(-1)[flat]
        bonus, width = self._bonus_and_width(rows, flat)
        index = means + bonus
        upper = index if width is bonus else means + width
        lower = means - width
        if not live.all():
            index, lower = np.where(live, index, -np.inf), np.where(live, lower, -np.inf)
            upper = np.where(live, upper, np.inf)
        self._index.reshape(-1)[flat] = index
        self._lower.reshape(-1)[flat] = lower
        self._upper.reshape(-1)[flat] = upper
        return lower, upper

    # -- policy --------------------------------------------------------------------------
    def index(self, stats: ArmStats) -> np.ndarray:
        """The cached index ``(R, K)``: -inf for eliminated and unobserved arms (read it, do not keep it)."""
        return self._index

    def select(self, stats: ArmStats) -> np.ndarray:
        self._advance(stats)
        rng = self.rng if self.params.tie_break == "random" else None
        if not self._all_seen:
            self._all_seen = bool(stats.counts.min() >= 1)
            if not self._all_seen:
                return select_by_index(stats, self._index, need=1, rng=rng)
        # every arm has a result and some arm is active: the cache is select_by_index's masked index
        return np.argmax(self._index, axis=1) if rng is None else argmax_random_ties(self._index, rng, stats.dispatched)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        flat = stats.flat_index(rows, arms)
        var = np.maximum(stats.m2.reshape(-1)[flat] * self.inv_n.reshape(-1)[flat], 0.0)
        spread = self.params.rho * (var + 2.0) / 4.0
        self.spread.reshape(-1)[flat] = spread
        self.unit_width.reshape(-1)[flat] = np.sqrt(spread) * self.inv_sqrt_n.reshape(-1)[flat]
        lower, upper = self._refresh(stats, rows, flat, stats.active.reshape(-1)[flat])
        ceiling = np.maximum(self._lower_ceiling[rows], lower)
        floor = np.minimum(self._upper_floor[rows], upper)
        self._lower_ceiling[rows] = ceiling
        self._upper_floor[rows] = floor
        # no elimination where every upper bound is above every lower bound
        suspect = (floor < ceiling) & (stats.observed[rows] > stats.n_arms)
        if suspect.any():
            self._eliminate(stats, rows[suspect])

    def _eliminate(self, stats: ArmStats, rows: np.ndarray) -> None:
        """The elimination test of replicas ``rows`` (unique), exact, from the cached bounds.

        The arm of the best lower bound always stays (its upper bound is above it), so the
        best lower bound is unchanged and stored exactly; the smallest upper bound is taken
        over the survivors.
        """
        lower, upper = self._lower[rows], self._upper[rows]
        best_lower = lower.max(axis=1)
        out = upper < best_lower[:, None]
        stats.active[rows] &= ~out
        self._index[rows] = np.where(out, -np.inf, self._index[rows])
        self._lower[rows] = np.where(out, -np.inf, lower)
        upper[out] = np.inf
        self._upper[rows] = upper
        self._lower_ceiling[rows] = best_lower
        self._upper_floor[rows] = upper.min(axis=1)
