"""UCB-V (Audibert, Munos & Szepesvari 2009, "Exploration-exploitation tradeoff using variance
estimates in multi-armed bandits", TCS 410)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins.regret.base import IndexPolicy, RegretParams, decision_index
from armlab.problem import Problem
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

    Speed: ``sqrt(V_k / N_k)`` is kept per arm and refreshed only for observed arms, the two
    per-replica factors become scalars when every replica is at the same decision, and the
    index is assembled in place in a preallocated buffer (same operations, same rounding).
    """

    name = "ucbv"
    Params = UCBVParams

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.sd_over_sqrt_n = np.zeros((replicas, problem.n_arms))  # sqrt(V_k / N_k)
        self._index = np.empty((replicas, problem.n_arms))
        self._range_term = np.empty((replicas, problem.n_arms))

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        flat = stats.flat_index(rows, arms)
        var = np.maximum(stats.m2.reshape(-1)[flat] * self.inv_n.reshape(-1)[flat], 0.0)
        self.sd_over_sqrt_n.reshape(-1)[flat] = np.sqrt(var) * self.inv_sqrt_n.reshape(-1)[flat]

    def index(self, stats: ArmStats) -> np.ndarray:
        """The index ``(R, K)`` (a buffer reused at every call: read it, do not keep it)."""
        p = self.params
        explore = p.zeta * np.log(decision_index(stats))
        root, slope = np.sqrt(2.0 * explore), 3.0 * p.b * p.c * explore
        if explore[0] == explore[-1] and (explore == explore[0]).all():  # lockstep: scalar factors
            root, slope = root[0], slope[0]
        else:
            root, slope = root[:, None], slope[:, None]
        np.multiply(self.sd_over_sqrt_n, root, out=self._index)
        np.add(stats.means, self._index, out=self._index)
        np.multiply(self.inv_n, slope, out=self._range_term)
        return np.add(self._index, self._range_term, out=self._index)
