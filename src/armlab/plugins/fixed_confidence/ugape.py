"""UGapE (Gabillon, Ghavamzadeh & Lazaric, NeurIPS 2012): one arm-selection rule for
(epsilon, m)-best-arm identification with a fixed budget (UGapEb) or a fixed confidence
(UGapEc).  Definitions: docs/algorithms/fixed-confidence.md.

At round ``t`` every arm ``k`` has a confidence width ``beta_k(t)`` and bounds ``U_k(t) =
mean_k + beta_k(t)``, ``L_k(t) = mean_k - beta_k(t)``.  The rule (the paper's Figure 1), for
every replica at once:

* gap indices ``B_k(t) = max^m_{i != k} U_i(t) - L_k(t)`` (:func:`gap_indices`);
* ``J(t)`` = the ``m`` arms with the smallest ``B_k(t)``;
* ``u_t = argmax_{j not in J(t)} U_j(t)``, ``l_t = argmin_{i in J(t)} L_i(t)``;
* pull whichever of ``u_t``, ``l_t`` has the larger width;
* ``B_{J(t)}(t) = max_{k in J(t)} B_k(t)``: UGapEc stops when it is below ``epsilon``, UGapEb
  answers the ``J(t)`` of its smallest value.

The two variants differ only in ``beta`` and in what they do with ``B_{J(t)}``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from armlab.complexity import h_epsilon, mth_largest
from armlab.errors import ConfigError
from armlab.plugins._fast.gap_round import GapRound, KeptGapRound
from armlab.plugins._fast.kept_arm_values import KeptArmValues
from armlab.plugins._fast.lookup_by_count_at_level import LookupByCountAtLevel
from armlab.plugins.fixed_confidence.common import (
    SET_OBJECTIVES,
    InitialRound,
    StoppingRule,
    argbest,
    as_answer,
    at_arms,
    best_of,
    require_top_m,
    resolve_delta,
    reward_span,
    set_mask,
    top_m,
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

__all__ = ["UGapEb", "UGapEc", "gap_indices", "select_arm", "ugape_round"]


def gap_indices(U: np.ndarray, L: np.ndarray, m: int) -> np.ndarray:
    """``B_k = max^m_{i != k} U_i - L_k`` for every arm of every row, ``max^m`` the m-th
    largest among the other arms."""
    mth, next_one = mth_largest(U, m)  # U_(m) and U_(m+1) over all arms
    # leaving out an arm at or above U_(m) makes U_(m+1) the m-th largest of the others
    return np.where(U >= mth, next_one, mth) - L


def select_arm(l: np.ndarray, u: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``I(t)``: whichever of ``l_t`` and ``u_t`` has the larger width, ``l_t`` on equal widths."""
    rows = np.arange(beta.shape[0])
    return np.where(beta[rows, l] >= beta[rows, u], l, u)


def ugape_round(beta: np.ndarray, U: np.ndarray, L: np.ndarray, m: int) -> GapRound:
    """UGapE's round ``t`` (the paper's Figure 1) in every row, from the widths ``beta_k(t)``
    and bounds ``U_k(t)``, ``L_k(t)`` ``(R, K)``.

    Ties: ``J(t)`` takes the lower index; ``u_t`` and ``l_t`` the larger width, then the lower
    index.
    """
    B = gap_indices(U, L, m)
    J = top_m(-B, m)  # the m arms of smallest B
    B_J = at_arms(B, J).max(axis=1)  # max_{k in J} B_k
    u = argbest(U, ~set_mask(J, U.shape[1]), largest=True, tiebreak=beta)  # argmax_{j not in J} U_j
    l = best_of(J, at_arms(L, J), largest=False, tiebreak=at_arms(beta, J))  # argmin_{i in J} L_i
    return GapRound(arm=select_arm(l, u, beta), chosen=J, b_set=B_J)


class _UGapE(Policy):
    """The shared rule: subclasses define the widths ``beta`` (Hoeffding form)."""

    objectives = SET_OBJECTIVES

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.top_m = require_top_m(self.name, problem)
        self.span = reward_span(self.name, problem, self.params.b)
        self._initial = InitialRound(replicas)
        self._rounds = KeptGapRound(ugape_round, top_m, replicas, problem.n_arms, self.top_m)  # sets kept

    @abstractmethod
    def bounds(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The widths ``beta_k(t)`` and bounds ``U_k(t)``, ``L_k(t)``, each ``(len(rows), K)``, of
        replicas ``rows`` (ascending, every arm observed)."""

    def round(self, stats: ArmStats, rows: np.ndarray) -> GapRound:
        """:func:`ugape_round` in replicas ``rows`` (ascending, every arm observed)."""
        return self._rounds.round(*self.bounds(stats, rows), rows)


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

    Pull each arm once, then run UGapE's rule with ``beta_k = b sqrt(a / T_k)``.  The answer
    is the set ``J(t)`` with the smallest ``B_J(t)`` over all rounds (a running best,
    strictly smaller wins, earlier on ties).  A round is computed when its statistics are
    complete, i.e. each time results arrive, from the first time every arm has one on
    (round K + 1 without delays), and so once more after the last result
    (docs/algorithms/fixed-confidence.md).  ``a = "optimal"`` uses ``a* = (n - K) / (4
    H_epsilon)`` computed per replica from the true means (H_epsilon of eq. 6 with top-m
    gaps), which minimises Theorem 1's bound ``2Kn exp(-2a)``.

    Rewards are assumed in ``[0, b]``.  Pending pulls count toward the initial round and the
    budget; the widths use observed rewards only.  Only the Hoeffding width is implemented:
    neither paper defines a variance (Bernstein) version of UGapE.
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
        self.next_arm = np.zeros(replicas, dtype=np.int64)  # I(t) of the last round computed
        # beta_k depends on the arm's count only: recomputed for the arms just observed
        self._beta = KeptArmValues(self.width_at, replicas, k)

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

    def width_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """``beta_k = b sqrt(a / T_k)`` at flat positions ``flat`` of replicas ``rows``."""
        with np.errstate(divide="ignore"):  # arms not pulled yet: infinite, never read
            return self.span * np.sqrt(self.a[rows] / stats.counts.reshape(-1)[flat])

    def bounds(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        beta, means = self._beta.current(stats), stats.means
        if rows.size != stats.replicas:
            beta, means = beta[rows], means[rows]
        return beta, means + beta, means - beta

    def select(self, stats: ArmStats) -> np.ndarray:
        ready, arms = self._initial.split(stats)
        arms[ready] = self.next_arm[ready]
        return arms

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._beta.observed(stats, rows, arms)
        rows = self._initial.past(stats, rows)
        if rows.size == 0:
            return
        now = self.round(stats, rows)
        self.next_arm[rows] = now.arm
        better = now.b_set < self.best_b[rows]
        self.best_b[rows[better]] = now.b_set[better]
        self.best_set[rows[better]] = set_mask(now.chosen[better], stats.n_arms)

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
        self._widths = LookupByCountAtLevel(self.width)  # beta is a function of the count while t is shared

    def width(self, counts: np.ndarray, t_minus_1: np.ndarray) -> np.ndarray:
        """``beta_k = b sqrt(c ln(4K(t-1)^3 / delta) / T_k)`` for counts ``T_k`` at ``t - 1``."""
        exploration = self.params.c * np.log(4.0 * self.problem.n_arms * t_minus_1**3 / self.delta)
        return self.span * np.sqrt(exploration / counts)

    def bounds(self, stats: ArmStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        every = rows.size == stats.replicas
        counts = stats.counts if every else stats.counts[rows]
        means = stats.means if every else stats.means[rows]
        beta = self._widths.values(counts, stats.observed[rows].astype(np.float64))
        return beta, means + beta, means - beta

    def select(self, stats: ArmStats) -> np.ndarray:
        ready, arms = self._initial.split(stats)
        ready = ready[~self.confident[ready]]
        if ready.size:
            now = self.round(stats, ready)
            done = now.b_set < self.problem.epsilon
            self.freeze(ready[done], set_mask(now.chosen[done], stats.n_arms))
            arms[ready] = now.arm
        return np.where(self.confident, STOPPED, arms)

    def anytime_set(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        return set_mask(self.round(stats, rows).chosen, stats.n_arms)
