"""UGapE (Gabillon, Ghavamzadeh & Lazaric 2012): one arm-selection rule for
(epsilon, m)-best-arm identification with a fixed budget (UGapEb) or a fixed confidence
(UGapEc).  Definitions: docs/algorithms/fixed-confidence.md."""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from armlab.complexity import h_epsilon, mth_largest
from armlab.errors import ConfigError
from armlab.plugins.fixed_confidence.common import (
    SET_OBJECTIVES,
    FirstRound,
    StoppingRule,
    TopSet,
    argbest,
    as_answer,
    best_of,
    require_top_m,
    resolve_delta,
    reward_span,
    set_mask,
    smallest_m,
)
from armlab.plugins.interfaces import (
    STOPPED,
    PluginParams,
    Policy,
    empirical_recommendation,
)
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
    mth, next_one = mth_largest(upper, m)
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
    """Shared selection; subclasses define the widths ``beta`` (Hoeffding form).

    A replica's choice, ``J`` and ``B_J`` depend only on its observed rewards, so they are
    evaluated once per new result (:meth:`current`) and kept.  The evaluation gives exactly
    :func:`gap_indices` and :func:`select_arm` without sorting the arms: the arms holding the
    m + 1 largest ``U`` and the set ``J`` are carried from the previous evaluation
    (:class:`~armlab.plugins.fixed_confidence.common.TopSet`), and ``u`` and ``l`` are
    looked up among their few arms.
    """

    objectives = SET_OBJECTIVES

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.top_m = require_top_m(self.name, problem)
        self.span = reward_span(self.name, problem, self.params.b)
        k = problem.n_arms
        self._first = FirstRound(replicas)
        # arms holding the m + 1 largest U, with spares: the arm pulled usually drops back
        spares = max(4, self.top_m // 2)
        self._top_upper = TopSet(replicas, k, self.top_m + 1, size=self.top_m + 1 + spares)
        self._answer = TopSet(replicas, k, self.top_m)  # J: the largest -B
        self._evaluated_at = np.full(replicas, -1, dtype=np.int64)  # observed count when evaluated
        self._arm = np.zeros(replicas, dtype=np.int64)
        self._b_set = np.zeros(replicas)
        self._neg_b = np.empty((replicas, k))  # -B of the replicas being evaluated

    @abstractmethod
    def bounds(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(beta, U, L)`` of replicas ``rows`` (ascending), each ``(len(rows), K)``; every arm
        has observations.  Read-only: they may be views of the policy's own arrays."""

    def current(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Evaluate replicas ``rows`` (ascending, every arm observed) that have new results."""
        stale = rows[self._evaluated_at[rows] != stats.observed[rows]]
        if stale.size:
            self._evaluate(stats, stale)

    def answer_set(self, rows: np.ndarray) -> np.ndarray:
        """``J`` of replicas ``rows`` as a boolean ``(len(rows), K)`` mask (evaluated rows)."""
        return set_mask(self._answer.members(rows), self.problem.n_arms)

    def _evaluate(self, stats: ArmStats, rows: np.ndarray) -> None:
        beta, upper, lower = self.bounds(stats, rows)
        n, k = upper.shape
        local = np.arange(n) * k
        top_u, ranked, outside_u = self._top_upper.update(upper, rows)
        spare = ranked.shape[0] - self.top_m - 1
        next_one, mth = ranked[spare], ranked[spare + 1]  # U_(m+1) and U_(m)
        # -B = L - (U_(m+1) if U >= U_(m) else U_(m)); while U_(m+1) < U_(m) only arms of
        # that top set reach U_(m), and where the two are equal both cases agree
        top_flat = self._top_upper.members(rows) + local
        neg_b = np.subtract(lower, mth[:, None], out=self._neg_b[:n])
        neg_b.reshape(-1)[top_flat] = lower.reshape(-1).take(top_flat) - np.where(top_u >= mth, next_one, mth)
        _, worst, _ = self._answer.update(neg_b, rows)
        self._b_set[rows] = -worst[0]
        answer = self._answer.members(rows)
        answer_flat = answer + local
        lo = best_of(answer, -lower.reshape(-1).take(answer_flat), beta.reshape(-1).take(answer_flat))
        u = self._best_outside_answer(upper, beta, rows, top_flat, top_u, outside_u)
        lo_beta, u_beta = beta.reshape(-1).take(local + lo), beta.reshape(-1).take(local + u)
        self._arm[rows] = np.where(lo_beta >= u_beta, lo, u)
        self._evaluated_at[rows] = stats.observed[rows]

    def _best_outside_answer(self, upper, beta, rows, top_flat, top_u, outside_u) -> np.ndarray:
        """``u = argmax_{not J} U`` (ties: larger beta, lower index); ``top_flat`` are the flat
        indices (in ``upper``) of the arms of the top set of U, ``top_u`` their U.

        Some arm holding one of the m + 1 largest U lies outside J, so the largest U outside J
        is found in that top set; the ties are settled there too, unless an arm outside the
        top set has the same U: then every arm is looked at.
        """
        n, k = upper.shape
        top_ids = self._top_upper.members(rows)
        candidates = top_u + self._answer.penalty.reshape(-1).take(top_ids + rows * k)  # -inf in J
        u = best_of(top_ids, candidates, beta.reshape(-1).take(top_flat))
        best = candidates.max(axis=0)
        tied = np.flatnonzero(outside_u >= best)
        if tied.size:
            every = 3 * tied.size > n  # many rows: a pass over all beats gathering them
            some = slice(None) if every else tied
            ties = upper[some] + self._answer.penalty_of(rows if every else rows[tied]) == best[some, None]
            # beta >= 0: beta * ties is beta on the ties and 0 elsewhere (a where is slower);
            # where every tied beta is 0 the first tie wins
            widest = np.argmax(beta[some] * ties, axis=1)
            zero = ~ties.reshape(-1)[np.arange(widest.size) * k + widest]
            widest[zero] = np.argmax(ties[zero], axis=1)
            u[tied] = widest[tied] if every else widest
        return u


class UGapEbParams(PluginParams):
    a: Annotated[float, Field(gt=0)] | Literal["optimal"] = Field(
        "optimal",
        description="exploration parameter a > 0 in beta = b sqrt(a / T_k), or 'optimal' for "
        "a* = (n - K) / (4 H_epsilon) from the true means (an oracle input)",
    )
    eta: float = Field(1.0, gt=0, description="multiplier of a (sensitivity studies; 1 = the given a)")
    b: float | None = Field(None, gt=0, description="rewards lie in [0, b]; default: the source's range width")


class UGapEb(_UGapE):
    """UGapEb, fixed budget n (Gabillon et al. 2012, Fig. 1 and Theorem 1).

    Pull each arm once, then run UGapE's selection with ``beta_k = b sqrt(a / T_k)``.  The
    answer is the set ``J(t)`` with the smallest ``B_J(t)`` over all evaluated rounds (a
    running best, strictly smaller wins, earlier on ties), evaluated from round K + 1 on and
    once more after the last result (docs/algorithms/fixed-confidence.md).  ``a = "optimal"`` uses
    ``a* = (n - K) / (4 H_epsilon)`` computed per replica from the true means (H_epsilon of
    eq. 6 with top-m gaps), which minimises Theorem 1's bound ``2Kn exp(-2a)``.

    Rewards are assumed in ``[0, b]``.  Pending pulls count toward the initial round and the
    budget; the widths use observed rewards only, and the running best is evaluated each
    time results arrive.  Only the Hoeffding width is implemented: neither paper defines a
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
        # beta, U and L of every arm, current as of _synced_at observed results
        self._beta, self._upper, self._lower = (np.zeros((replicas, k)) for _ in range(3))
        self._synced_at = np.full(replicas, -1, dtype=np.int64)

    def _optimal_a(self, problem: Problem) -> np.ndarray:
        truth = problem.require_truth(self.name, "means (for a = 'optimal')", parameter="a to a number")
        try:
            h = h_epsilon(truth.means, self.top_m, problem.epsilon, self.span)
        except ValueError as exc:
            raise ConfigError(
                f"{self.name}: a = 'optimal' needs a finite H_epsilon, but {exc}; use "
                f"[problem] epsilon > 0 or give a number for a"
            ) from None
        return (problem.budget - problem.n_arms) / (4.0 * h)

    def bounds(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stale = rows[self._synced_at[rows] != stats.observed[rows]]
        if stale.size:  # results folded in without update() (hand-set statistics)
            beta = self.span * np.sqrt(self.a[stale, None] / stats.counts[stale])
            means = stats.means[stale]
            self._beta[stale], self._upper[stale], self._lower[stale] = beta, means + beta, means - beta
            self._synced_at[stale] = stats.observed[stale]
        if rows.size == stats.replicas:
            return self._beta, self._upper, self._lower
        return self._beta[rows], self._upper[rows], self._lower[rows]

    def select(self, stats: ArmStats) -> np.ndarray:
        ready, arms = self._first.split(stats)
        if ready.size:
            self.current(stats, ready)
            arms[ready] = self._arm[ready]
        return arms

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        # beta depends only on the arm's count: refresh the arm observed, where the bounds
        # were current before this result
        in_step = self._synced_at[rows] + 1 == stats.observed[rows]
        synced = rows[in_step]
        flat = stats.flat_index(synced, arms[in_step])
        beta = self.span * np.sqrt(self.a[synced] / stats.counts.reshape(-1)[flat])
        means = stats.means.reshape(-1)[flat]
        self._beta.reshape(-1)[flat] = beta
        self._upper.reshape(-1)[flat], self._lower.reshape(-1)[flat] = means + beta, means - beta
        self._synced_at[synced] = stats.observed[synced]
        rows = self._first.observed_all(stats, rows)
        if rows.size == 0:
            return
        self.current(stats, rows)
        b_set = self._b_set[rows]
        better = rows[b_set < self.best_b[rows]]
        self.best_b[better] = self._b_set[better]
        self.best_set[better] = self.answer_set(better)

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
    """UGapEc, fixed confidence delta (Gabillon et al. 2012, Fig. 1 and Theorem 2).

    Pull each arm once; then before every pull compute ``B_J(t)`` with
    ``beta_k = b sqrt(c ln(4K(t-1)^3 / delta) / T_k)`` (``t - 1`` = observed rewards so far)
    and stop, answering ``J(t)``, as soon as ``B_J(t) < epsilon``; otherwise pull by UGapE's
    rule.  With probability at least ``1 - delta`` the answer is (epsilon, m)-optimal.  The
    budget is only a cap: replicas that reach it unconfident answer ``J(t)`` and count as
    not stopped.

    Rewards are assumed in ``[0, b]``.  Pending pulls count toward the initial round; the
    widths and the stopping test use observed rewards only, so with delayed feedback the
    rule may stop while pulls are in flight (their results do not change the frozen answer).
    Only the Hoeffding width is implemented (the paper defines no Bernstein version).
    """

    name = "ugapec"
    Params = UGapEcParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.delta = resolve_delta(self.name, problem, self.params.delta)
        # beta, U and L of the replicas last evaluated (every width changes with t, so they
        # are recomputed at each evaluation, into these buffers)
        self._beta, self._upper, self._lower = (np.empty((replicas, problem.n_arms)) for _ in range(3))
        self._count_values = np.zeros(0)

    def _counts_up_to(self, total: int) -> np.ndarray:
        """``0, 1, ..., total`` as floats, ``inf`` in place of 0 (evaluated arms have counts >= 1,
        and ``x / inf`` needs no guard against a division by zero)."""
        if self._count_values.size <= total:
            self._count_values = np.arange(2.0 * total + 2.0)
            self._count_values[0] = np.inf
        return self._count_values[: total + 1]

    def bounds(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        every = rows.size == stats.replicas
        counts = stats.counts if every else stats.counts[rows]
        means = stats.means if every else stats.means[rows]
        observed = stats.observed[rows]
        scale = self.params.c * np.log(4.0 * stats.n_arms * observed.astype(np.float64) ** 3 / self.delta)
        n = rows.size
        beta, upper, lower = self._beta[:n], self._upper[:n], self._lower[:n]
        if (observed == observed[0]).all():  # replicas in lockstep: beta is a function of the count
            # (counts never exceed the observed total, so a table up to it covers them)
            np.take(self.span * np.sqrt(scale[0] / self._counts_up_to(observed[0])), counts, out=beta)
        else:
            np.multiply(self.span, np.sqrt(scale[:, None] / counts), out=beta)
        return beta, np.add(means, beta, out=upper), np.subtract(means, beta, out=lower)

    def select(self, stats: ArmStats) -> np.ndarray:
        ready, arms = self._first.split(stats)
        ready = ready[~self.confident[ready]]
        if ready.size:
            self.current(stats, ready)
            done = ready[self._b_set[ready] < self.problem.epsilon]
            self.freeze(done, self.answer_set(done))
            arms[ready] = self._arm[ready]
        return np.where(self.confident, STOPPED, arms)

    def anytime_set(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        self.current(stats, rows)
        return self.answer_set(rows)
