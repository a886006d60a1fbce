"""UCB1 (Auer, Cesa-Bianchi & Fischer 2002)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.interfaces import PluginParams
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class UCB1Params(PluginParams):
    exploration: float = Field(2.0, gt=0, description="c in mean + sqrt(c ln n / N_i); 2 is UCB1")
    tie_break: TieBreak = tie_break_field()


class UCB1(IndexPolicy):
    """UCB1: pull ``argmax_i mean_i + sqrt(2 ln n / N_i)`` after one pull of each arm.

    ``n`` is the number of observed rewards so far (t - 1 at decision t) and ``N_i`` the
    observed pulls of arm i.  Anytime; analysed for rewards in [0, 1], runs unchanged on any
    real rewards.  Pending pulls: an arm whose first result is still in flight is not pulled
    again until it arrives.
    """

    name = "ucb1"
    Params = UCB1Params

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._terms = ArmTerms(replicas, problem.n_arms, inv_sqrt_n=lambda arm: 1.0 / np.sqrt(arm.counts))

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._terms.observed(stats, rows, arms)

    def exploration(self, stats: ArmStats) -> np.ndarray:
        """``sqrt(c ln n)`` per replica ``(R,)``."""
        return np.sqrt(self.params.exploration * np.log(np.maximum(stats.observed, 1)))

    def index(self, stats: ArmStats) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
            return stats.means + self.exploration(stats)[:, None] * (1.0 / np.sqrt(stats.counts))

    def current_index(self, stats: ArmStats) -> np.ndarray:
        return self._terms.mean_plus(stats, inv_sqrt_n=self.exploration(stats))

    def choice_holds(self, stats: ArmStats) -> bool:
        """Once every arm is warm and active, with lowest-index ties: the index reads only
        results (means, observed counts), which dispatches do not change."""
        return self.tie_rng() is None and self._warm_arms.ready(stats)
