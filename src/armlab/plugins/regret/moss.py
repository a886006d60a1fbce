"""MOSS (Audibert & Bubeck 2009, "Minimax policies for adversarial and stochastic bandits")."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins.regret.base import IndexPolicy, RegretParams, decision_index
from armlab.problem import Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["MOSS"]


class MOSSParams(RegretParams):
    horizon: Literal["T", "t"] = Field(
        "T",
        description="T: the original index with the horizon; t: the author code's anytime form with the "
        "decision index t in place of T",
    )


class MOSS(IndexPolicy):
    """MOSS: pull ``argmax mean_i + sqrt(max(log(T / (K N_i)), 0) / N_i)``.

    Source: ALGORITHMS-regret.md 3.3 (the paper's index; SMPY ``MOSSH``).  With
    ``horizon = "T"`` the index of an arm changes only when it is observed, so it is cached
    and refreshed in :meth:`update` for the touched arms; the bonus is exactly 0 once
    ``N_i >= T / K``.  ``horizon = "t"`` is the author code's ``log((t + 1) / (K N_i))``
    with its 0-based ``t``, i.e. the decision index here (anytime).  Needs the horizon with
    the default.  Analysed for rewards in [0, 1]; other rewards are used raw.  Pending pulls:
    as every index policy.
    """

    name = "moss"
    Params = MOSSParams
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.log_kn = np.zeros((replicas, problem.n_arms))  # log(K N_i)
        self.cached = np.zeros((replicas, problem.n_arms))  # the T-form index

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        log_kn = np.log(stats.n_arms * stats.counts[rows, arms].astype(np.float64))
        self.log_kn[rows, arms] = log_kn
        bonus = np.maximum(np.log(self.problem.budget) - log_kn, 0.0) * self.inv_n[rows, arms]
        self.cached[rows, arms] = stats.means[rows, arms] + np.sqrt(bonus)

    def index(self, stats: ArmStats) -> np.ndarray:
        if self.params.horizon == "T":
            return self.cached
        log_t = np.log(decision_index(stats))[:, None]
        return stats.means + np.sqrt(np.maximum(log_t - self.log_kn, 0.0) * self.inv_n)
