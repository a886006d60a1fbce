"""The greedy-confidence-pursuit paper's random Bernoulli bandits: a fresh instance per replica with a controlled gap."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from armlab.complexity import mth_largest
from armlab.errors import ConfigError
from armlab.plugins.interfaces import PluginParams, RewardSource
from armlab.problem import Truth
from armlab.random import KeyedRandom

__all__ = ["RandomBernoulli"]

#: Redraws allowed before the gap window is declared unreachable for this arm count.
MAX_ATTEMPTS = 100_000


class RandomBernoulliParams(PluginParams):
    n_arms: int = Field(ge=2, description="number of arms K")
    m: int = Field(1, ge=1, description="the gap checked is r_(m) - r_(m+1); use the problem's m")
    gap_min: float = Field(0.05, ge=0, description="smallest accepted gap r_(m) - r_(m+1)")
    gap_max: float = Field(0.15, gt=0, description="largest accepted gap")
    low: float = Field(0.1, ge=0, le=1, description="returns are drawn uniformly on [low, high]")
    high: float = Field(0.9, ge=0, le=1, description="upper end of the returns")
    gap_check: Literal["post_scale", "pre_scale"] = Field(
        "post_scale",
        description="post_scale: check the gap of the returns (paper); pre_scale: check it on the "
        "U[0, 1] draws before mapping to [low, high] (authors' code)",
    )
    order: Literal["descending", "shuffled"] = Field(
        "descending", description="descending: arm 1 is best (paper); shuffled: a random arm order per replica"
    )

    @model_validator(mode="after")
    def _check(self) -> RandomBernoulliParams:
        if self.m >= self.n_arms:
            raise ValueError(f"m = {self.m} must be smaller than n_arms = {self.n_arms}")
        if self.gap_max < self.gap_min:
            raise ValueError(f"gap_max = {self.gap_max} is below gap_min = {self.gap_min}")
        if self.high <= self.low:
            raise ValueError(f"high = {self.high} must exceed low = {self.low}")
        return self


class RandomBernoulli(RewardSource):
    """Random Bernoulli bandits of the greedy-confidence-pursuit paper's section 4 (Bachman & Precup, Figs. 1-3).

    Each replica gets its own instance: K returns drawn i.i.d. uniformly on [low, high]
    (default [0.1, 0.9]), all redrawn until the gap ``r_(m) - r_(m+1)`` lies in
    ``[gap_min, gap_max]`` (default [0.05, 0.15]), then sorted in descending order (arm 1
    best).  The draws are counter-based, keyed by (seed, replica, attempt), so replica r has
    the same instance in every run and for every policy; rewards use the common keyed
    uniforms (the k-th pull of an arm is the same outcome for every policy, as in the
    authors' pre-generated outcome sequences).

    Deviation options: ``gap_check = "pre_scale"`` reproduces the authors' code (gap tested
    on U[0, 1] before the mapping, realised gaps 0.8 times smaller); ``order = "shuffled"``
    removes the advantage the sorted order gives to rules that break ties by lower index.
    """

    name = "random-bernoulli"
    Params = RandomBernoulliParams
    reward_range = (0.0, 1.0)

    @property
    def n_arms(self) -> int:
        return self.params.n_arms

    def truth_for(self, rng: KeyedRandom) -> Truth:
        p = self.params
        k, m, span = p.n_arms, p.m, p.high - p.low
        scale = span if p.gap_check == "post_scale" else 1.0
        means = np.empty((rng.replicas.size, k))
        todo = np.arange(rng.replicas.size)
        for attempt in range(MAX_ATTEMPTS):
            u = rng.uniform(attempt, k, rows=todo)
            mth, next_one = mth_largest(u, m)
            gap = scale * (mth[:, 0] - next_one[:, 0])
            ok = (gap >= p.gap_min) & (gap <= p.gap_max)
            means[todo[ok]] = p.low + span * -np.sort(-u[ok], axis=1)
            todo = todo[~ok]
            if todo.size == 0:
                break
        else:
            raise ConfigError(
                f"{self.name}: no draw of {k} returns had r_(m) - r_(m+1) in [{p.gap_min}, {p.gap_max}] "
                f"within {MAX_ATTEMPTS} attempts; widen the gap window"
            )
        if p.order == "shuffled":
            permutation = np.argsort(rng.uniform(MAX_ATTEMPTS, k), axis=1)
            means = np.take_along_axis(means, permutation, axis=1)
        return Truth(means=means, variances=means * (1.0 - means))

    def rewards_from_uniforms(self, rows, arms, u) -> np.ndarray:
        return (u < self.truth.means[rows, arms]).astype(np.float64)
