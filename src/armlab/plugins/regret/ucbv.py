"""UCB-V (Audibert, Munos & Szepesvari 2009, "Exploration-exploitation tradeoff using variance
estimates in multi-armed bandits", TCS 410)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.regret.base import RegretParams, decision_index, require_budget_for_first_pulls
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["UCBV"]


class UCBVParams(RegretParams):
    b: float = Field(1.0, gt=0, description="reward range b (rewards in [a, a + b]); the EUCBV paper's experiments use 1")
    c: float = Field(1.0, gt=0, description="constant c of the range term c * 3 b E / N")
    zeta: float = Field(1.2, gt=0, description="exploration E_t = zeta log t; the theorem needs zeta > 1 (pymaBandits: 1)")


class UCBV(IndexPolicy):
    """UCB-V: pull ``argmax mean_k + sqrt(2 V_k E_t / N_k) + 3 b c E_t / N_k``, ``E_t = zeta log t``.

    Source: docs/algorithms/regret.md (the paper's general form with exploration function
    ``E_t``; SMPY's UCBV is the case zeta = c = 1).  ``V_k`` is the biased empirical
    variance, ``t`` the decision index.  Anytime.  Analysed for rewards in [0, b]; rewards
    outside [0, 1] (the EUCBV paper's Gaussian experiments) are used raw with ``b = 1`` unchanged,
    so ``V`` may exceed ``b^2``.  Pending pulls: as every index policy (one observation of
    each arm first; statistics are observed results only).  The author code's variant
    (log(t + 1), no factor 3, a wrong variance) is not reproduced (docs/algorithms/regret.md).
    """

    name = "ucbv"
    Params = UCBVParams
    objectives = frozenset({Objective.REGRET})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_budget_for_first_pulls(problem, self.name)
        self._terms = ArmTerms(replicas, problem.n_arms, sd_over_sqrt_n=_sd_over_sqrt_n,
                               inv_n=lambda arm: 1.0 / arm.counts)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._terms.observed(stats, rows, arms)

    def exploration(self, stats: ArmStats) -> np.ndarray:
        """``E_t = zeta log t`` per replica ``(R,)``."""
        return self.params.zeta * np.log(decision_index(stats))

    def index(self, stats: ArmStats) -> np.ndarray:
        p, explore = self.params, self.exploration(stats)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
            variance_term = _sd_over_sqrt_n(stats) * np.sqrt(2.0 * explore)  # sqrt(2 V_k E_t / N_k)
            range_term = 3.0 * p.b * p.c * explore * (1.0 / stats.counts)  # 3 b c E_t / N_k
            return stats.means + variance_term + range_term

    def current_index(self, stats: ArmStats) -> np.ndarray:
        p, explore = self.params, self.exploration(stats)
        return self._terms.mean_plus(stats, sd_over_sqrt_n=np.sqrt(2.0 * explore), inv_n=3.0 * p.b * p.c * explore)


def _sd_over_sqrt_n(arm: ArmStats) -> np.ndarray:
    """``sqrt(V_k / N_k)`` with ``V_k`` the biased empirical variance."""
    inv_n = 1.0 / arm.counts
    return np.sqrt(np.maximum(arm.m2 * inv_n, 0.0)) * np.sqrt(inv_n)
