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

    Source: docs/algorithms/regret.md (the paper's index; SMPY ``MOSSH``).  With
    ``horizon = "T"`` the index of an arm changes only when it is observed, so it is cached
    and refreshed in :meth:`update` for the touched arms; the bonus is exactly 0 once
    ``N_i >= T / K``.  ``horizon = "t"`` is the author code's ``log((t + 1) / (K N_i))``
    with its 0-based ``t``, i.e. the decision index here (anytime; computed in place in a
    preallocated buffer, with a scalar ``log t`` when every replica is at the same
    decision).  Needs the horizon with the default.  Analysed for rewards in [0, 1]; other
    rewards are used raw.  Pending pulls: as every index policy.
    """

    name = "moss"
    Params = MOSSParams
    needs_horizon = True

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.log_kn = np.zeros((replicas, problem.n_arms))  # log(K N_i)
        self.cached = np.zeros((replicas, problem.n_arms))  # the T-form index
        self._index = np.empty((replicas, problem.n_arms))  # the t-form index
        self._log_horizon = np.log(problem.budget)

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        super().update(stats, rows, arms, rewards)
        flat = stats.flat_index(rows, arms)
        log_kn = np.log(stats.n_arms * stats.counts.reshape(-1)[flat].astype(np.float64))
        self.log_kn.reshape(-1)[flat] = log_kn
        bonus = np.maximum(self._log_horizon - log_kn, 0.0) * self.inv_n.reshape(-1)[flat]
        self.cached.reshape(-1)[flat] = stats.means.reshape(-1)[flat] + np.sqrt(bonus)

    def index(self, stats: ArmStats) -> np.ndarray:
        """The index ``(R, K)`` (the t-form in a buffer reused at every call: read it, do not keep it)."""
        if self.params.horizon == "T":
            return self.cached
        log_t = np.log(decision_index(stats))
        log_t = log_t[0] if log_t[0] == log_t[-1] and (log_t == log_t[0]).all() else log_t[:, None]
        index = np.subtract(log_t, self.log_kn, out=self._index)
        np.maximum(index, 0.0, out=index)
        np.multiply(index, self.inv_n, out=index)
        np.sqrt(index, out=index)
        return np.add(stats.means, index, out=index)
