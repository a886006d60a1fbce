"""DMED, Deterministic Minimum Empirical Divergence (Honda & Takemura 2010), pymaBandits' list version."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins._fast.arm_list import ArmList
from armlab.plugins._fast.divergence_test import DivergenceTest
from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.regret.base import require_unit_rewards
from armlab.plugins.regret.bounds import kl_bernoulli
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
    """DMED: pull each arm once, then work through a list of arms that is rebuilt when empty.

    Source: docs/algorithms/regret.md (pymaBandits' list version).  When the list is empty
    it becomes every arm with ``N_i kl(mean_i, max_j mean_j) < log(n / N_i)`` (``n`` =
    observed pulls + 1; ``log n`` with ``genuine = false``), in increasing index order; an
    empty result holds the empirical best arm (a guard that pymaBandits' counter makes
    unnecessary).  The list is stored as a mask plus the arms' pulls at the rebuild: an arm
    leaves the list once it was dispatched again, so ``select`` stays repeatable.  ``kl`` is
    the Bernoulli divergence, exact for Bernoulli rewards (the EUCBV paper's Experiment 1,
    the only one that runs DMED); rewards outside [0, 1] are refused at reset.  Anytime.
    Pending pulls: they remove an arm from the list when dispatched; rebuilds use observed
    results only and leave out arms without any (they are still waiting for the first one).
    No ties: the list is served in index order.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    name = "dmed"
    Params = DMEDParams
    objectives = frozenset({Objective.REGRET})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_unit_rewards(problem, self.name, "DMED's Bernoulli divergence needs bounded rewards")
        self.list = ArmList(replicas, problem.n_arms)
        self._divergence = DivergenceTest(self.divergence_test, replicas, problem.n_arms, log_count=self.params.genuine)
        self._warm_arms = WarmArms(need=1)

    def waiting(self, stats: ArmStats) -> np.ndarray:
        """The arms still in each replica's list ``(R, K)``: listed and not dispatched since."""
        return self.list.listed & (stats.pulls == self.list.pulls_at_build)

    def divergence_test(self, counts: np.ndarray, means: np.ndarray, best: np.ndarray, n: np.ndarray) -> np.ndarray:
        """``N_i kl(mean_i, best) < log(n / N_i)`` (``log n`` if not genuine), elementwise."""
        budget = np.log(n / counts) if self.params.genuine else np.log(n)
        return counts * kl_bernoulli(means, best) < budget

    def new_lists(self, stats: ArmStats, rows: np.ndarray) -> np.ndarray:
        """The lists of replicas ``rows``: the observed arms that pass :meth:`divergence_test`
        with ``best = max_j mean_j`` and ``n`` = observed pulls + 1, or the empirical best if
        there is none."""
        seen = stats.counts[rows] > 0
        best = np.max(stats.means[rows], axis=1, where=seen, initial=-np.inf)  # max_j mean_j
        listed = self._divergence.passes(stats, rows, best, stats.observed[rows] + 1.0)
        empty = np.flatnonzero(~listed.any(axis=1))
        if empty.size:
            listed[empty, np.argmax(np.where(seen[empty], stats.means[rows[empty]], -np.inf), axis=1)] = True
        return listed

    def select(self, stats: ArmStats) -> np.ndarray:
        head, nonempty = self.list.heads(stats)  # the first arm of each list, if any
        empty = ~nonempty
        ready = self._warm_arms.ready(stats)  # every arm has a result and is active
        if not ready:  # a list is built once every arm was pulled and some result is in
            empty &= (stats.pulls > 0).all(axis=1) & (stats.counts > 0).any(axis=1)
        rows = np.flatnonzero(empty)
        if rows.size:
            listed = self.new_lists(stats, rows)
            self.list.build(stats, rows, listed)
            head[rows] = np.argmax(listed, axis=1)
        if ready:
            return head
        # the first pull of each arm, then the head of the list (if it is active and observed)
        one_hot = np.zeros((stats.replicas, stats.n_arms))
        one_hot[np.arange(stats.replicas), head] = 1.0
        return select_by_index(stats, one_hot)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self.list.observed(stats, rows, arms)
        self._divergence.observed(stats, rows, arms)
