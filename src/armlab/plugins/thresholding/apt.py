"""APT, the Anytime Parameter-free Thresholding algorithm (Locatelli, Gutzeit & Carpentier 2016)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins.thresholding._common import ArmView, ArmwiseKeyPolicy, IndexParams, threshold_of
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom


class APTParams(IndexParams):
    epsilon: float = Field(
        0.05, ge=0, description="precision: arms within epsilon of tau count as equally hard (Mukherjee et al.'s experiments: 0.05)"
    )


class APT(ArmwiseKeyPolicy):
    """APT: after one pull of each arm, pull ``argmin_i sqrt(n_i) * (|mean_i - tau| + epsilon)``
    (docs/algorithms/thresholding.md).

    Source: Locatelli et al. (ICML 2016), as run by Mukherjee et al. (2017).  Anytime:
    needs neither the budget nor a complexity.  Analysed for sub-Gaussian rewards; runs on
    any real rewards.  Output: the common thresholding rule ``{i : n_i >= 1, mean_i >= tau}``.

    Pending pulls: ``n_i`` counts pulls (observed + pending), the mean uses observed rewards,
    so results in flight spread the next pulls over other arms; with immediate feedback this
    is the paper's rule.  Mukherjee et al. count any misclassified arm as an error, also inside
    ``[tau - epsilon, tau + epsilon]``, which Locatelli et al.'s loss forgives.
    """

    name = "apt"
    Params = APTParams
    objectives = frozenset({Objective.THRESHOLD})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        self.threshold = threshold_of(self, problem)

    def key(self, arm: ArmView) -> np.ndarray:
        """``sqrt(n_i) (|mean_i - tau| + epsilon)``."""
        return np.sqrt(arm.pulls) * (np.abs(arm.means - self.threshold) + self.params.epsilon)
