"""OCUCB, optimally confident UCB (Lattimore 2015, arXiv:1507.07880), horizon-dependent form."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins.regret.base import IndexPolicy, RegretParams, decision_index
from armlab.problem import Problem
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

    Speed, as UCB1: one multiply-add over the cached ``1 / sqrt(N_i)``, with a scalar scale
    when every replica is at the same decision, into a preallocated buffer.
    """

    name = "ocucb"
    Params = OCUCBParams
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self._index = np.empty((replicas, problem.n_arms))

    def index(self, stats: ArmStats) -> np.ndarray:
        """The index ``(R, K)`` (a buffer reused at every call: read it, do not keep it)."""
        p = self.params
        # t <= T while the replica runs; the clamp covers select calls for finished replicas
        confidence = p.alpha * np.maximum(np.log(p.psi * self.problem.budget / decision_index(stats)), 0.0)
        scale = np.sqrt(confidence)
        scale = scale[0] if scale[0] == scale[-1] and (scale == scale[0]).all() else scale[:, None]
        np.multiply(self.inv_sqrt_n, scale, out=self._index)
        return np.add(stats.means, self._index, out=self._index)
