"""The greedy-confidence-pursuit paper's multi-bandit instances (Figs. 4-5): a best arm a given gap above the rest."""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from armlab.plugins.interfaces import PluginParams, RewardSource
from armlab.problem import Truth
from armlab.random import KeyedRandom

__all__ = ["GapBernoulli"]


class GapBernoulliParams(PluginParams):
    n_arms: int = Field(10, ge=2, description="number of arms K")
    gap: float | None = Field(None, gt=0, le=0.5, description="the best arm's lead; omit to draw it per replica")
    gap_min: float = Field(0.01, gt=0, le=0.5, description="lower end of the uniform gap draw (gap omitted)")
    gap_max: float = Field(0.1, gt=0, le=0.5, description="upper end of the uniform gap draw (gap omitted)")
    best_arm: int = Field(0, ge=0, description="0-based index of the best arm")

    @model_validator(mode="after")
    def _check(self) -> GapBernoulliParams:
        if self.best_arm >= self.n_arms:
            raise ValueError(f"best_arm = {self.best_arm} must be below n_arms = {self.n_arms} (0-based)")
        if self.gap is None and self.gap_max < self.gap_min:
            raise ValueError(f"gap_max = {self.gap_max} is below gap_min = {self.gap_min}")
        return self


class GapBernoulli(RewardSource):
    """Bernoulli bandits of the greedy-confidence-pursuit paper's multi-bandit tests (Bachman & Precup, section 6).

    Given the gap ``g``, the best arm returns ``0.5 + g``; the other K - 1 returns are drawn
    i.i.d. uniformly on [0, 0.5] and shifted by a constant so that their maximum is exactly
    0.5 (the runner-up; docs/algorithms/sources.md).  ``gap`` fixes ``g``; without it ``g`` is drawn uniformly
    on ``[gap_min, gap_max]`` (Fig. 5: [0.01, 0.10]).  Each replica, and each bandit of a
    multi-bandit experiment, draws its own instance from the counter-based generator, so an
    instance is the same for every compared method (and so are its outcomes, common random
    numbers).  The authors' code also sorts the other arms of target-best bandits; the
    metrics do not depend on the arm order, so we keep the draw order.
    """

    name = "gap-bernoulli"
    Params = GapBernoulliParams
    reward_range = (0.0, 1.0)

    @property
    def n_arms(self) -> int:
        return self.params.n_arms

    def truth_for(self, rng: KeyedRandom) -> Truth:
        p = self.params
        u = rng.uniform(0, p.n_arms)
        others = 0.5 * u[:, : p.n_arms - 1]
        others += 0.5 - others.max(axis=1, keepdims=True)
        gap = np.full(u.shape[0], p.gap) if p.gap is not None else p.gap_min + (p.gap_max - p.gap_min) * u[:, -1]
        means = np.insert(others, p.best_arm, 0.5 + gap, axis=1)
        return Truth(means=means, variances=means * (1.0 - means))

    def rewards_from_uniforms(self, rows, arms, u) -> np.ndarray:
        return (u < self.truth.means[rows, arms]).astype(np.float64)
