"""UCB1 (Auer, Cesa-Bianchi & Fischer 2002)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.policies._index import select_by_index
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class UCB1Params(PluginParams):
    exploration: float = Field(2.0, gt=0, description="c in mean + sqrt(c ln n / N_i); 2 is UCB1")
    tie_break: Literal["lowest", "random"] = Field(
        "lowest", description="exact ties: lowest arm index, or uniformly at random (seeded)"
    )


class UCB1(Policy):
    """UCB1: pull ``argmax_i mean_i + sqrt(2 ln n / N_i)`` after one pull of each arm.

    ``n`` is the number of observed rewards so far (t - 1 at decision t) and ``N_i`` the
    observed pulls of arm i.  Anytime; analysed for rewards in [0, 1], runs unchanged on any
    real rewards.  Pending pulls: an arm whose first result is still in flight is not pulled
    again until it arrives.
    """

    name = "ucb1"
    Params = UCB1Params
    objectives = frozenset(Objective)

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._inv_sqrt = np.zeros((replicas, problem.n_arms))

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._inv_sqrt[rows, arms] = 1.0 / np.sqrt(stats.counts[rows, arms])

    def index(self, stats: ArmStats) -> np.ndarray:
        """The UCB1 index ``(R, K)`` (arms without observations get a zero bonus here)."""
        n = np.maximum(stats.observed, 1).astype(np.float64)
        scale = np.sqrt(self.params.exploration * np.log(n))[:, None]
        return stats.means + scale * self._inv_sqrt

    def select(self, stats: ArmStats) -> np.ndarray:
        rng = self.rng if self.params.tie_break == "random" else None
        return select_by_index(stats, self.index(stats), need=1, rng=rng)
