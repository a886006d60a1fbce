"""UCB1 (Auer, Cesa-Bianchi & Fischer 2002)."""

from __future__ import annotations

from functools import partial

import numpy as np
from pydantic import Field

from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class UCB1Params(PluginParams):
    exploration: float = Field(2.0, gt=0, description="c in mean + sqrt(c ln n / N_i); 2 is UCB1")
    tie_break: TieBreak = tie_break_field()


class UCB1(Policy):
    """UCB1: pull ``argmax_i mean_i + sqrt(2 ln n / N_i)`` after one pull of each arm.

    ``n`` is the number of observed rewards so far (t - 1 at decision t) and ``N_i`` the
    observed pulls of arm i.  Anytime; analysed for rewards in [0, 1], runs unchanged on any
    real rewards.  Pending pulls: an arm whose first result is still in flight is not pulled
    again until it arrives.  ``1/sqrt(N_i)`` is updated only for the arm observed, so a step
    costs one multiply-add and one argmax over the arms.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    name = "ucb1"
    Params = UCB1Params

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._inv_sqrt = np.zeros((replicas, problem.n_arms))
        self._flat_inv_sqrt = self._inv_sqrt.reshape(-1)
        self._index = np.empty((replicas, problem.n_arms))
        self._warmup = WarmArms(need=1)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        flat = stats.flat_index(rows, arms)
        self._flat_inv_sqrt[flat] = 1.0 / np.sqrt(stats.counts.reshape(-1)[flat])

    def index(self, stats: ArmStats) -> np.ndarray:
        """The UCB1 index ``(R, K)`` (arms without observations get a zero bonus here)."""
        n = stats.observed
        if n[0] == n[-1] and (n == n[0]).all():  # replicas in lockstep: one scalar scale
            scale = np.sqrt(self.params.exploration * np.log(max(int(n[0]), 1)))
        else:
            scale = np.sqrt(self.params.exploration * np.log(np.maximum(n, 1)))[:, None]
        np.multiply(self._inv_sqrt, scale, out=self._index)
        np.add(self._index, stats.means, out=self._index)
        return self._index

    def select(self, stats: ArmStats) -> np.ndarray:
        rng = self.rng if self.params.tie_break == "random" else None
        return self._warmup.select(stats, partial(self.index, stats), rng)
