"""DMED, Deterministic Minimum Empirical Divergence (Honda & Takemura 2010), pymaBandits' list version."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.regret.base import require_unit_rewards
from armlab.plugins.regret.bounds import CLAMP, kl_bernoulli, neg_entropy
from armlab.plugins.selection import select_by_index
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["DMED"]


class DMEDParams(PluginParams):
    genuine: bool = Field(
        True,
        description="criterion log(n / N_i) (Honda-Takemura, pymaBandits) if true, log n "
        "(Garivier-Cappe's DMED) if false",
    )


class DMED(Policy):
    """DMED: pull each arm once, then work through a list of arms that are rebuilt when empty.

    Source: docs/algorithms/regret.md (pymaBandits' list version).  When the list is empty
    it becomes every arm with ``N_i kl(mean_i, max_j mean_j) < log(n / N_i)`` (``n`` =
    observed pulls + 1; ``log n`` with ``genuine = false``), in increasing index order; an
    empty result holds the empirical best arm (a guard that pymaBandits' counter makes
    unnecessary).  The list is stored as a mask plus the arms' pull counts at the rebuild:
    an arm leaves the list once it was dispatched again, so ``select`` stays repeatable.
    ``kl`` is the Bernoulli divergence, exact for Bernoulli rewards (the EUCBV paper's Experiment 1,
    the only one that runs DMED); rewards outside [0, 1] are refused at reset.  Anytime.
    Pending pulls: they remove an arm from the list when dispatched; rebuilds use observed
    results only and leave out arms without any (they are still waiting for the first one).
    No ties: the list is served in index order.

    Speed: the list still waiting is kept as a mask.  While no trial is pending every
    dispatch is reported to :meth:`update` with its result, which then drops just that arm;
    otherwise the mask is recomputed from the pull counts.  Once every arm has a result, the
    first waiting arm is the choice (no masks), and only replicas with an empty list rebuild.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    name = "dmed"
    Params = DMEDParams
    objectives = frozenset({Objective.REGRET})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_unit_rewards(problem, self.name, "DMED's Bernoulli divergence needs bounded rewards")
        self.listed = np.zeros((replicas, problem.n_arms), dtype=bool)
        self.pulls_at_build = np.zeros((replicas, problem.n_arms), dtype=np.int64)
        self._waiting = np.zeros((replicas, problem.n_arms), dtype=bool)  # waiting(), as of the last check
        # per arm, for the rebuild: the mean (-inf before the first result), N h(mean) (+ log N
        # if genuine; +inf before the first result) and N mean
        self._seen_means = np.full((replicas, problem.n_arms), -np.inf)
        self._own_terms = np.full((replicas, problem.n_arms), np.inf)
        self._weighted_means = np.zeros((replicas, problem.n_arms))
        self._in_sync = False  # no trial was pending at the last select: the updates since report every pull
        self._row_starts = np.arange(replicas) * problem.n_arms
        self._warmup = WarmArms(need=1)

    def waiting(self, stats: ArmStats) -> np.ndarray:
        """Arms still in each replica's list ``(R, K)``: listed and not dispatched since."""
        return self.listed & (stats.pulls == self.pulls_at_build)

    def _rebuild(self, stats: ArmStats, rows: np.ndarray) -> None:
        """New lists for replicas ``rows``: the arms with ``N_i kl(mean_i, best) < budget_i``.

        Written as ``N kl(p, q) - log(n / N) = N h(p) + log N - N log(1 - q) - N p log(q / (1 - q))
        - log n`` (``h`` the negative entropy, ``q`` clamped as in :func:`kl_bernoulli`; without
        ``log N`` when ``genuine = false``), the test needs no logarithm per arm: the per-arm
        parts are cached by :meth:`update`.  This value is within ``1e-12 N`` of the test as
        written (rounding, and the clamp of ``p`` left out); arms decided with a margin of
        ``1e-9 n`` are decided so, the others (in practice none) take the exact test.
        """
        n = stats.observed[rows] + 1.0
        log_n = np.log(n)
        means = self._seen_means[rows]
        best = means.max(axis=1)
        top = np.clip(best, CLAMP, 1.0 - CLAMP)
        log_rest = np.log1p(-top)
        counts = stats.counts[rows]
        excess = self._own_terms[rows]  # minus log n: compared with log n below
        excess -= counts * log_rest[:, None]
        weighted = self._weighted_means[rows]
        weighted *= (np.log(top) - log_rest)[:, None]
        excess -= weighted
        margin = 1e-9 * n
        listed = excess < (log_n - margin)[:, None]
        near = excess <= (log_n + margin)[:, None]
        if np.count_nonzero(near) > np.count_nonzero(listed):  # too close to call: the exact test
            rows_in, arms = np.nonzero(near & ~listed)
            pulls = counts[rows_in, arms]
            budget = np.log(n[rows_in] / pulls) if self.params.genuine else log_n[rows_in]
            listed[rows_in, arms] = pulls * kl_bernoulli(means[rows_in, arms], best[rows_in]) < budget
        empty = ~listed.any(axis=1)
        listed[empty, np.argmax(means[empty], axis=1)] = True
        self.listed[rows] = listed
        self.pulls_at_build[rows] = counts if self._in_sync else counts + stats.pending[rows]
        self._waiting[rows] = listed

    def select(self, stats: ArmStats) -> np.ndarray:
        in_sync = stats.all_observed()
        if not (in_sync and self._in_sync):
            self._waiting = self.waiting(stats)
        self._in_sync = in_sync
        ready = self._warmup.ready(stats)  # every arm has a result: every replica started, its list is usable
        first = np.argmax(self._waiting, axis=1)
        empty = ~self._waiting.reshape(-1)[self._row_starts + first]
        if not ready:
            empty &= (stats.pulls > 0).all(axis=1) & (stats.counts > 0).any(axis=1)  # initial pulls done
        rows = np.flatnonzero(empty)
        if rows.size:
            self._rebuild(stats, rows)
            first[rows] = np.argmax(self._waiting[rows], axis=1)
        if ready:
            return first
        front = np.zeros(self._waiting.shape)
        front[np.arange(stats.replicas), first] = 1.0
        return select_by_index(stats, front, need=1)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        flat = stats.flat_index(rows, arms)
        counts, means = stats.counts.reshape(-1)[flat], stats.means.reshape(-1)[flat]
        own = counts * neg_entropy(means)
        self._own_terms.reshape(-1)[flat] = own + np.log(counts) if self.params.genuine else own
        self._weighted_means.reshape(-1)[flat] = counts * means
        self._seen_means.reshape(-1)[flat] = means
        self._waiting.reshape(-1)[flat] &= stats.pulls_at(flat) == self.pulls_at_build.reshape(-1)[flat]
