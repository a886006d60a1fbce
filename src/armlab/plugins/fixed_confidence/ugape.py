"""UGapE (Gabillon, Ghavamzadeh & Lazaric 2012, seed 002): one arm-selection rule for
(epsilon, m)-best-arm identification with a fixed budget (UGapEb) or a fixed confidence
(UGapEc).  Definitions: ALGORITHMS-pure-exploration.md section 4.1-4.3."""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from armlab.complexity import h_epsilon
from armlab.errors import ConfigError
from armlab.plugins.fixed_confidence.common import (
    SET_OBJECTIVES,
    StoppingRule,
    argbest,
    as_answer,
    first_round,
    require_top_m,
    resolve_delta,
    reward_span,
    smallest_m,
)
from armlab.plugins.interfaces import STOPPED, PluginParams, Policy, empirical_recommendation
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["UGapEb", "UGapEc", "gap_indices", "select_arm"]


def gap_indices(means: np.ndarray, beta: np.ndarray, m: int) -> tuple[np.ndarray, ...]:
    """UGapE's quantities for every row: ``(U, L, B, J, B_J)``.

    ``U = mean + beta``, ``L = mean - beta``, ``B_k`` = m-th largest ``U`` among the other
    arms minus ``L_k``; ``J`` (boolean mask) = the m arms with the smallest ``B`` (ties:
    lower index); ``B_J = max_{k in J} B_k``.
    """
    upper, lower = means + beta, means - beta
    top = -np.partition(-upper, (m - 1, m), axis=1)
    mth, next_one = top[:, m - 1 : m], top[:, m : m + 1]
    # removing an arm at or above the m-th largest U promotes the (m+1)-th (ties included)
    b_index = np.where(upper >= mth, next_one, mth) - lower
    chosen = smallest_m(b_index, m)
    b_set = np.where(chosen, b_index, -np.inf).max(axis=1)
    return upper, lower, b_index, chosen, b_set


def select_arm(upper, lower, beta, chosen) -> np.ndarray:
    """Pull ``l_t = argmin_{J} L`` or ``u_t = argmax_{not J} U``, whichever has the larger
    width (``l_t`` on equal widths); both argmins break ties by larger width, lower index."""
    u = argbest(upper, beta, ~chosen, largest=True)
    lo = argbest(lower, beta, chosen, largest=False)
    rows = np.arange(beta.shape[0])
    return np.where(beta[rows, lo] >= beta[rows, u], lo, u)


class _UGapE(Policy):
    """Shared selection; subclasses define the widths ``beta`` (Hoeffding form)."""

    objectives = SET_OBJECTIVES

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.top_m = require_top_m(self.name, problem)
        self.span = reward_span(self.name, problem, self.params.b)

    @abstractmethod
    def widths(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        """``beta`` of replicas ``rows``, ``(len(rows), K)``; every arm has observations."""

    def indices(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        beta = self.widths(stats, rows)
        return (*gap_indices(stats.means[rows], beta, self.top_m), beta)

    def choose(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        upper, lower, _, chosen, _, beta = self.indices(stats, rows)
        return select_arm(upper, lower, beta, chosen)


class UGapEbParams(PluginParams):
    a: Annotated[float, Field(gt=0)] | Literal["optimal"] = Field(
        "optimal",
        description="exploration parameter a > 0 in beta = b sqrt(a / T_k), or 'optimal' for "
        "a* = (n - K) / (4 H_epsilon) from the true means (an oracle input)",
    )
    eta: float = Field(1.0, gt=0, description="multiplier of a (sensitivity studies; 1 = the given a)")
    b: float | None = Field(None, gt=0, description="rewards lie in [0, b]; default: the source's range width")


class UGapEb(_UGapE):
    """UGapEb, fixed budget n (seed 002, Gabillon et al. 2012, Fig. 1 and Theorem 1).

    Pull each arm once, then run UGapE's selection with ``beta_k = b sqrt(a / T_k)``.  The
    answer is the set ``J(t)`` with the smallest ``B_J(t)`` over all evaluated rounds (a
    running best, strictly smaller wins, earlier on ties), evaluated from round K + 1 on and
    once more after the last result (Part C #20).  ``a = "optimal"`` uses
    ``a* = (n - K) / (4 H_epsilon)`` computed per replica from the true means (H_epsilon of
    eq. 6 with top-m gaps), which minimises Theorem 1's bound ``2Kn exp(-2a)``.

    Rewards are assumed in ``[0, b]``.  Pending pulls count toward the initial round and the
    budget; the widths use observed rewards only, and the running best is evaluated each
    time results arrive.  Only the Hoeffding width is implemented: the sheet defines no
    variance (Bernstein) version of UGapE.
    """

    name = "ugapeb"
    Params = UGapEbParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        if problem.budget <= k:
            raise ConfigError(
                f"{self.name}: budget n = {problem.budget} must exceed K = {k} (one pull per arm "
                f"comes first); raise [problem] budget"
            )
        a = np.full(replicas, self.params.a) if self.params.a != "optimal" else self._optimal_a(problem)
        self.a = self.params.eta * np.broadcast_to(a, (replicas,)).astype(np.float64)
        self.best_b = np.full(replicas, np.inf)
        self.best_set = np.zeros((replicas, k), dtype=bool)

    def _optimal_a(self, problem: Problem) -> np.ndarray:
        truth = problem.require_truth(self.name, "means (for a = 'optimal')")
        try:
            h = h_epsilon(truth.means, self.top_m, problem.epsilon, self.span)
        except ValueError as exc:
            raise ConfigError(
                f"{self.name}: a = 'optimal' needs a finite H_epsilon, but {exc}; use "
                f"[problem] epsilon > 0 or give a number for a"
            ) from None
        return (problem.budget - problem.n_arms) / (4.0 * h)

    def widths(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        return self.span * np.sqrt(self.a[rows, None] / stats.counts[rows])

    def select(self, stats: ArmStats) -> np.ndarray:
        initialising, arms = first_round(stats)
        ready = np.flatnonzero(~initialising)
        if ready.size:
            arms[ready] = self.choose(stats, ready)
        return arms

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        rows = rows[(stats.counts[rows] > 0).all(axis=1)]
        if rows.size == 0:
            return
        _, _, _, chosen, b_set, _ = self.indices(stats, rows)
        better = b_set < self.best_b[rows]
        self.best_b[rows[better]] = b_set[better]
        self.best_set[rows[better]] = chosen[better]

    def recommend(self, stats: ArmStats) -> np.ndarray:
        answer = as_answer(self.problem, self.best_set)
        evaluated = np.isfinite(self.best_b)
        if evaluated.all():
            return answer
        fallback = empirical_recommendation(self.problem, stats)
        return np.where(evaluated if answer.ndim == 1 else evaluated[:, None], answer, fallback)


class UGapEcParams(PluginParams):
    delta: float | None = Field(
        None, gt=0, lt=1, description="confidence parameter; default: [problem] delta"
    )
    c: float = Field(0.5, gt=0, description="c in beta = b sqrt(c ln(4K(t-1)^3 / delta) / T_k); 1/2 in the paper")
    b: float | None = Field(None, gt=0, description="rewards lie in [0, b]; default: the source's range width")


class UGapEc(_UGapE, StoppingRule):
    """UGapEc, fixed confidence delta (seed 002, Gabillon et al. 2012, Fig. 1 and Theorem 2).

    Pull each arm once; then before every pull compute ``B_J(t)`` with
    ``beta_k = b sqrt(c ln(4K(t-1)^3 / delta) / T_k)`` (``t - 1`` = observed rewards so far)
    and stop, answering ``J(t)``, as soon as ``B_J(t) < epsilon``; otherwise pull by UGapE's
    rule.  With probability at least ``1 - delta`` the answer is (epsilon, m)-optimal.  The
    budget is only a cap: replicas that reach it unconfident answer ``J(t)`` and count as
    not stopped.

    Rewards are assumed in ``[0, b]``.  Pending pulls count toward the initial round; the
    widths and the stopping test use observed rewards only, so with delayed feedback the
    rule may stop while pulls are in flight (their results do not change the frozen answer).
    Only the Hoeffding width is implemented (the sheet defines no Bernstein version).
    """

    name = "ugapec"
    Params = UGapEcParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.delta = resolve_delta(self.name, problem, self.params.delta)

    def widths(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        k = stats.n_arms
        log_term = np.log(4.0 * k * stats.observed[rows].astype(np.float64) ** 3 / self.delta)
        return self.span * np.sqrt(self.params.c * log_term[:, None] / stats.counts[rows])

    def select(self, stats: ArmStats) -> np.ndarray:
        initialising, arms = first_round(stats)
        ready = np.flatnonzero(~initialising & ~self.confident)
        if ready.size:
            upper, lower, _, chosen, b_set, beta = self.indices(stats, ready)
            done = b_set < self.problem.epsilon
            self.freeze(ready[done], chosen[done])
            arms[ready] = select_arm(upper, lower, beta, chosen)
        return np.where(self.confident, STOPPED, arms)

    def anytime_set(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        return self.indices(stats, rows)[3]
