"""DMED, Deterministic Minimum Empirical Divergence (Honda & Takemura 2010), pymaBandits' list version."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.policies._index import select_by_index
from armlab.plugins.regret.base import require_unit_rewards
from armlab.plugins.regret.bounds import kl_bernoulli
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["DMED"]


class DMEDParams(PluginParams):
    genuine: bool = Field(
        True,
        description="criterion log(n / N_i) (Honda-Takemura, the seed's pymaBandits code) if true, log n "
        "(Garivier-Cappe's DMED) if false",
    )


class DMED(Policy):
    """DMED: pull each arm once, then work through a list of arms that are rebuilt when empty.

    Source: ALGORITHMS-regret.md 3.5 (pymaBandits' list version).  When the list is empty
    it becomes every arm with ``N_i kl(mean_i, max_j mean_j) < log(n / N_i)`` (``n`` =
    observed pulls + 1; ``log n`` with ``genuine = false``), in increasing index order; an
    empty result holds the empirical best arm (a guard that pymaBandits' counter makes
    unnecessary).  The list is stored as a mask plus the arms' pull counts at the rebuild:
    an arm leaves the list once it was dispatched again, so ``select`` stays repeatable.
    ``kl`` is the Bernoulli divergence, exact for Bernoulli rewards (the seed's Experiment 1,
    the only one that runs DMED); rewards outside [0, 1] are refused at reset.  Anytime.
    Pending pulls: they remove an arm from the list when dispatched; rebuilds use observed
    results only and leave out arms without any (they are still waiting for the first one).
    No ties: the list is served in index order.
    """

    name = "dmed"
    Params = DMEDParams
    objectives = frozenset({Objective.REGRET})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_unit_rewards(problem, self.name, "DMED's Bernoulli divergence needs bounded rewards")
        self.listed = np.zeros((replicas, problem.n_arms), dtype=bool)
        self.pulls_at_build = np.zeros((replicas, problem.n_arms), dtype=np.int64)

    def waiting(self, stats: ArmStats) -> np.ndarray:
        """Arms still in each replica's list ``(R, K)``: listed and not dispatched since."""
        return self.listed & (stats.pulls == self.pulls_at_build)

    def _rebuild(self, stats: ArmStats, rows: np.ndarray) -> None:
        counts = stats.counts[rows]
        seen = counts > 0
        means = np.where(seen, stats.means[rows], -np.inf)
        best = means.max(axis=1, keepdims=True)
        n = stats.observed[rows, None] + 1.0
        with np.errstate(divide="ignore"):
            budget = np.log(n / counts) if self.params.genuine else np.broadcast_to(np.log(n), counts.shape)
            listed = seen & (counts * kl_bernoulli(stats.means[rows], best) < budget)
        empty = ~listed.any(axis=1)
        listed[empty, np.argmax(means[empty], axis=1)] = True
        self.listed[rows] = listed
        self.pulls_at_build[rows] = stats.pulls[rows]

    def select(self, stats: ArmStats) -> np.ndarray:
        waiting = self.waiting(stats)
        started = (stats.pulls > 0).all(axis=1) & (stats.counts > 0).any(axis=1)  # initial pulls done
        rows = np.flatnonzero(~waiting.any(axis=1) & started)
        if rows.size:
            self._rebuild(stats, rows)
            waiting = self.waiting(stats)
        first = np.argmax(waiting, axis=1)
        front = np.zeros(waiting.shape)
        front[np.arange(stats.replicas), first] = 1.0
        return select_by_index(stats, front, need=1)
