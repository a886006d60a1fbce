"""UCBEV: seed 000's thresholding adaptation of GapE-V (Gabillon et al. 2011)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.complexity import tbp_gaps, variance_complexity
from armlab.plugins.thresholding._common import (
    ArmwiseKeyPolicy,
    OracleIndexParams,
    exploration_parameter,
    gathered,
    require_budget,
    threshold_of,
)
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class UCBEVParams(OracleIndexParams):
    squared: bool = Field(
        True,
        description="H_sigma,1 with the squared numerator (GapE-V, the authors' code; default) or "
        "unsquared as seed 000 prints it",
    )
    b: float = Field(
        1.0, gt=0, description="range bound b of the rewards in the Bernstein width (seed 000: 1)"
    )


class UCBEV(ArmwiseKeyPolicy):
    """UCBEV: thresholding with GapE-V's empirical-Bernstein index and an oracle-tuned ``a``.

    After two pulls of each arm, pull
    ``argmin_i |mean_i - tau| - (sqrt(2 a s_i^2 / n_i) + 7 a b / (3 (n_i - 1)))``.

    Source: seed 000 section 4 ("identical to UCBE, but with a = (T - 2K)/H_sigma,1"), read
    as GapE-V's empirical-Bernstein index (Gabillon et al., NeurIPS 2011), sheet 2.4 and
    Part C #3: read literally the index would ignore the variances, contradicting
    experiment 5.  ``s_i^2`` is the unbiased sample variance.  ``a`` is given, or the oracle
    ``a_scale * (T - 2K) / H_sigma,1`` per replica from the true means and variances
    (squared numerator by default, Part C #2; seed 000 uses a_scale = 1, "UCBEV(1)", and
    experiment 6 also 4^-1 and 4^4).  Requires ``T > 2K``.  Analysed for rewards
    in [0, b]; runs on any real rewards.  Output: the common rule
    ``{i : n_i >= 1, mean_i >= tau}``.

    Deviations from the authors' code (sheet 2.4): factor 1 instead of 8/9 (set
    ``a_scale = 0.888...`` to match), unbiased instead of biased variance, ``7ab/(3(n-1))``
    instead of their ``7a/(3n-1)``, H over all K arms.

    Pending pulls: ``n_i`` in the width counts pulls (observed + pending); the mean and
    ``s_i^2`` use observed rewards; the paper's rule with immediate feedback.
    """

    name = "ucbev"
    Params = UCBEVParams
    objectives = frozenset({Objective.THRESHOLD})
    need = 2

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        require_budget(self, problem, 2 * k, "two initial pulls per arm, and a = (T - 2K)/H_sigma,1 > 0")
        self.threshold = threshold_of(self, problem)
        self.a = exploration_parameter(
            self, problem, replicas, what="means and variances", complexity=self._oracle_h_sigma1,
            numerator=problem.budget - 2 * k, formula="a = (T - 2K)/H_sigma,1",
        )

    def _oracle_h_sigma1(self, truth: Truth) -> np.ndarray:
        gaps = tbp_gaps(truth.means, self.threshold)
        return variance_complexity(gaps, truth.variances, squared=self.params.squared, b=self.params.b)

    def key_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Index to minimise (arms with fewer than 2 pulls get a finite dummy)."""
        counts, pulls, means = gathered(stats, flat)
        variances = np.zeros(flat.shape)
        np.divide(stats.m2.reshape(-1)[flat], counts - 1, out=variances, where=counts > 1)  # unbiased s^2
        n = np.maximum(pulls, 2).astype(np.float64)
        a = self.a[rows]
        width = np.sqrt(2.0 * a * variances / n) + 7.0 * a * self.params.b / (3.0 * (n - 1.0))
        return np.abs(means - self.threshold) - width
