"""CSAR (Chen, Lin, King, Lyu & Chen 2014) specialised to the thresholding bandit."""

from __future__ import annotations

import math

import numpy as np

from armlab.plugins.interfaces import (
    STOPPED,
    PluginParams,
    Policy,
    empirical_recommendation,
)
from armlab.plugins.thresholding._common import (
    Variant,
    require_budget,
    threshold_of,
    variant_field,
)
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


def csar_phase_lengths(budget: int, n_arms: int) -> np.ndarray:
    """Cumulative pulls per undecided arm ``n~_p = ceil((T - K) / (log~(K) (K - p + 1)))``,
    ``p = 1..K``, with ``log~(K) = sum_{i=1..K} 1/i``."""
    harmonic = sum(1.0 / i for i in range(1, n_arms + 1))
    p = np.arange(1, n_arms + 1)
    exact = (budget - n_arms) / (harmonic * (n_arms - p + 1))
    # the tolerance keeps ratios that are integers in exact arithmetic from rounding up
    return np.ceil(exact - 1e-9).astype(np.int64)


def authors_code_phase_lengths(budget: int, n_arms: int) -> np.ndarray:
    """The authors' code: cumulative pulls per active arm after phase ``k = 0..K-1``,
    ``n_k = ceil((T - K) / (logK (K + 1 - k)))`` with ``logK = 1/2 + sum_{i=1..K} 1/i``."""
    log_k = 0.5 + sum(1.0 / i for i in range(1, n_arms + 1))
    return np.array([math.ceil((budget - n_arms) / (log_k * (n_arms + 1 - k))) for k in range(n_arms)])


class CSARParams(PluginParams):
    variant: Variant = variant_field(
        "accept or reject the undecided arm farthest from tau after each phase",
        "only reject, after each phase, the active arm of lowest mean among those below tau (if any)",
    )


class CSAR(Policy):
    """Combinatorial Successive Accept-Reject for thresholding: K phases, one arm decided per phase.

    Source: Chen et al., "Combinatorial pure exploration of multi-armed bandits" (NeurIPS
    2014), specialised to "all subsets" with weights ``mu_e - tau``, as a baseline of
    Mukherjee et al. (IJCAI 2017), who only say "reject the arm farthest from tau after each
    round".  Two variants (``variant``), step by step in docs/algorithms/thresholding.md:

    * ``"paper"`` (default), the accept-or-reject specialisation (the schedule is
      reconstructed from Chen et al., not checked against their text): with
      ``log~(K) = sum_{i=1..K} 1/i`` and ``n~_p = ceil((T - K) / (log~(K) (K - p + 1)))``,
      phase ``p = 1..K`` pulls every undecided arm ``n~_p - n~_{p-1}`` times (round robin,
      index order), then decides the undecided arm farthest from tau (``argmax |mean - tau|``,
      ties lowest index): accept if ``mean >= tau``, else reject.  After phase K the replica
      stops (``sum_p n~_p <= T`` pulls used).  Output: accepted arms plus undecided arms with
      ``n_i >= 1`` and ``mean >= tau``.
    * ``"authors-code"``, reject-only, as the authors' public code runs it: with
      ``logK = 1/2 + sum_{i=1..K} 1/i`` and ``n_k = ceil((T - K) / (logK (K + 1 - k)))``,
      phase ``k = 0..K-1`` pulls every active (not rejected) arm until it has ``n_k`` pulls
      (``n_k - n_{k-1}`` more; round robin, index order: the order inside a phase is
      armlab's), then rejects the active arm with the lowest mean among the active arms with
      ``mean < tau``, if there is one.  Since arms above tau are never rejected, phases
      usually need more pulls than the schedule's total and the budget ends the run.  Output:
      the active arms with ``n_i >= 1`` and ``mean >= tau``.

    With immediate feedback both outputs equal the common thresholding rule restricted to
    the arms not yet decided, plus (paper) the accepted ones.  Assumes sub-Gaussian rewards.
    Requires ``T > K``.

    Pending pulls: the schedule counts dispatched pulls, so a phase ends when its pulls are
    dispatched and the decision uses the results observed by then; later results still
    update the means of undecided arms but never revise a decision.
    """

    name = "csar"
    Params = CSARParams
    objectives = frozenset({Objective.THRESHOLD})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        require_budget(self, problem, k, "every phase must pull each undecided arm at least once")
        self.threshold = threshold_of(self, problem)
        self.accepted = np.zeros((replicas, k), dtype=bool)  # the authors' code accepts none
        self.phase = np.zeros(replicas, dtype=np.int64)  # phases completed
        if self.params.variant == "authors-code":
            self.code_lengths = authors_code_phase_lengths(problem.budget, k)
            return
        lengths = csar_phase_lengths(problem.budget, k)
        per_arm = np.diff(lengths, prepend=0)
        #: first trial of each phase p = 1..K, plus the end of the last phase
        self.phase_start = np.concatenate([[0], np.cumsum((k - np.arange(k)) * per_arm)])
        #: per replica the undecided arms in index order, then the decided ones
        self.undecided_first = np.tile(np.arange(k), (replicas, 1))

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.variant == "authors-code":
            return self._authors_code_select(stats)
        return self._paper_select(stats)

    # -- "paper": accept or reject ------------------------------------------------------------
    def _paper_select(self, stats: ArmStats) -> np.ndarray:
        """End the phases whose pulls are all dispatched, then the next arm of the phase's
        round robin over the undecided arms (index order); STOPPED after phase K."""
        self._end_phases(stats)
        k = stats.n_arms
        phase = np.minimum(self.phase, k - 1)
        pulls_into_phase = stats.dispatched - self.phase_start[phase]
        rank = pulls_into_phase % (k - phase)  # k - phase undecided arms
        arms = self.undecided_first[np.arange(stats.replicas), rank]
        return np.where(self.phase >= k, STOPPED, arms)

    def _end_phases(self, stats: ArmStats) -> None:
        """Decide one arm per phase whose pulls are all dispatched (several for empty phases)."""
        due = np.searchsorted(self.phase_start[1:], stats.dispatched, side="right")
        while True:
            rows = np.flatnonzero(due > self.phase)
            if rows.size == 0:
                return
            self._decide(stats, rows)
            self.phase[rows] += 1

    def _decide(self, stats: ArmStats, rows: np.ndarray) -> None:
        """The undecided arm farthest from tau (lowest index on ties; an arm without results,
        possible with delays, only if no undecided arm has any) is accepted if its mean is at
        least tau, else rejected."""
        undecided = stats.active[rows]
        seen = stats.counts[rows] > 0
        distance = np.abs(stats.means[rows] - self.threshold)
        score = np.where(undecided, np.where(seen, distance, -1.0), -np.inf)
        arm = np.argmax(score, axis=1)
        above = seen[np.arange(rows.size), arm] & (stats.means[rows, arm] >= self.threshold)
        self.accepted[rows, arm] = above
        stats.active[rows, arm] = False
        self.undecided_first[rows] = np.argsort(~stats.active[rows], axis=1, kind="stable")

    # -- "authors-code": reject only ----------------------------------------------------------
    def _authors_code_select(self, stats: ArmStats) -> np.ndarray:
        """The active arm with the fewest pulls (lowest index first); once it has the phase's
        ``n_k``, the phase is over: reject (at most one arm) and look again; STOPPED after
        phase K - 1."""
        k = stats.n_arms
        while True:
            pulls = np.where(stats.active, stats.pulls, np.iinfo(np.int64).max)
            fewest = np.argmin(pulls, axis=1)
            target = self.code_lengths[np.minimum(self.phase, k - 1)]
            rows = np.flatnonzero((self.phase < k) & (pulls[np.arange(stats.replicas), fewest] >= target))
            if rows.size == 0:
                return np.where(self.phase >= k, STOPPED, fewest)
            self._reject_lowest_below_tau(stats, rows)
            self.phase[rows] += 1

    def _reject_lowest_below_tau(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Reject the active arm of lowest mean among the active arms with ``mean < tau``, if any."""
        below = stats.active[rows] & (stats.counts[rows] > 0) & (stats.means[rows] < self.threshold)
        arm = np.argmin(np.where(below, stats.means[rows], np.inf), axis=1)
        some = below.any(axis=1)
        stats.active[rows[some], arm[some]] = False

    def recommend(self, stats: ArmStats) -> np.ndarray:
        return np.where(stats.active, empirical_recommendation(self.problem, stats), self.accepted)
