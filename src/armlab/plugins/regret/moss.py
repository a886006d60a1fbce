"""MOSS (Audibert & Bubeck 2009, "Minimax policies for adversarial and stochastic bandits")."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.regret.base import RegretParams, decision_index, require_budget_for_first_pulls
from armlab.problem import Objective, Problem
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

    Source: docs/algorithms/regret.md (the paper's index; SMPY ``MOSSH``); the bonus is
    exactly 0 once ``N_i >= T / K``.  ``horizon = "t"`` is the author code's
    ``log((t + 1) / (K N_i))`` with its 0-based ``t``, i.e. the decision index here
    (anytime).  Needs the horizon with the default.  Analysed for rewards in [0, 1]; other
    rewards are used raw.  Pending pulls: as every index policy.
    """

    name = "moss"
    Params = MOSSParams
    objectives = frozenset({Objective.REGRET})
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_budget_for_first_pulls(problem, self.name)
        k, log_horizon = problem.n_arms, np.log(problem.budget)
        if self.params.horizon == "T":  # the index of an arm changes only when the arm is observed
            self._terms = ArmTerms(replicas, k, index=lambda arm: _index(arm, log_horizon, k))
        else:
            self._terms = ArmTerms(replicas, k, log_kn=lambda arm: np.log(k * arm.counts),
                                   inv_n=lambda arm: 1.0 / arm.counts)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._terms.observed(stats, rows, arms)

    def index(self, stats: ArmStats) -> np.ndarray:
        if self.params.horizon == "T":
            log_horizon = np.log(self.problem.budget)
        else:
            log_horizon = np.log(decision_index(stats))[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
            return _index(stats, log_horizon, stats.n_arms)

    def current_index(self, stats: ArmStats) -> np.ndarray:
        terms = self._terms.current(stats)
        if self.params.horizon == "T":
            return terms.index
        log_ratio = np.log(decision_index(stats))[:, None] - terms.log_kn  # log(t / (K N_i))
        return stats.means + np.sqrt(np.maximum(log_ratio, 0.0) * terms.inv_n)


def _index(arm: ArmStats, log_horizon: np.ndarray | float, n_arms: int) -> np.ndarray:
    """``mean_i + sqrt(max(log(H / (K N_i)), 0) / N_i)`` given ``log H`` (``H = T`` or ``t``)."""
    log_ratio = log_horizon - np.log(n_arms * arm.counts)  # log(H / (K N_i))
    return arm.means + np.sqrt(np.maximum(log_ratio, 0.0) * (1.0 / arm.counts))
