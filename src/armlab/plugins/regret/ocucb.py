"""OCUCB, optimally confident UCB (Lattimore 2015, arXiv:1507.07880), horizon-dependent form."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins._fast.arm_terms import ArmTerms
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.regret.base import RegretParams, decision_index, require_budget_for_first_pulls
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["OCUCB"]


class OCUCBParams(RegretParams):
    alpha: float = Field(3.0, gt=0, description="alpha; 3 in Lattimore's libbandit demo, 2 in the EUCBV authors' code")
    psi: float = Field(2.0, ge=1, description="psi in log(psi T / t); 2 in Lattimore's demo (>= 1 keeps the log >= 0)")


class OCUCB(IndexPolicy):
    """OCUCB: pull ``argmax mean_i + sqrt((alpha / N_i) log(psi T / t))`` at decision ``t``.

    Source: docs/algorithms/regret.md (libbandit ``OCUCB::set_index``, SMPY ``OCUCBH``).  The
    anytime OCUCB of Lattimore (2016) is a different algorithm and is not this one.  Needs
    the horizon ``T``; the logarithm's argument is >= psi because ``t <= T``.  Analysed for
    1-subgaussian noise (fine for [0, 1] rewards and the EUCBV paper's Gaussian arms); rewards are
    used raw.  Pending pulls: as every index policy.
    """

    name = "ocucb"
    Params = OCUCBParams
    objectives = frozenset({Objective.REGRET})
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        require_budget_for_first_pulls(problem, self.name)
        self._terms = ArmTerms(replicas, problem.n_arms, sqrt_inv_n=lambda arm: np.sqrt(1.0 / arm.counts))

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        self._terms.observed(stats, rows, arms)

    def confidence(self, stats: ArmStats) -> np.ndarray:
        """``sqrt(alpha log(psi T / t))`` per replica ``(R,)``."""
        p = self.params
        # t <= T while the replica runs; the clamp covers select calls for finished replicas
        return np.sqrt(p.alpha * np.maximum(np.log(p.psi * self.problem.budget / decision_index(stats)), 0.0))

    def index(self, stats: ArmStats) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):  # arms not observed yet: ignored
            return stats.means + np.sqrt(1.0 / stats.counts) * self.confidence(stats)[:, None]

    def current_index(self, stats: ArmStats) -> np.ndarray:
        return self._terms.mean_plus(stats, sqrt_inv_n=self.confidence(stats))
