"""UCBEV: Mukherjee et al.'s thresholding adaptation of GapE-V (Gabillon et al. 2011)."""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from armlab.complexity import tbp_gaps, variance_complexity
from armlab.plugins.thresholding._common import (
    ArmView,
    ArmwiseKeyPolicy,
    OracleIndexParams,
    Variant,
    authors_code_gaps,
    exploration_parameter,
    require_budget,
    threshold_of,
    variant_field,
)
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom


class UCBEVParams(OracleIndexParams):
    squared: bool = Field(
        True,
        description="H_sigma,1 with the squared numerator (GapE-V, the authors' code; default) or "
        "unsquared as Mukherjee et al. print it",
    )
    b: float = Field(
        1.0, gt=0, description="range bound b of the rewards in the Bernstein width (the paper: 1)"
    )
    variant: Variant = variant_field(
        "two initial pulls, unbiased variance, width "
        "sqrt(2 a s^2 / n) + 7 a b / (3 (n - 1)), a = (T - 2K) / H over all K arms",
        "one initial pull, biased variance, width sqrt(2 a v / n) + 7 a / (3 n - 1), "
        "a = (8/9)(T - 2K) / H with H leaving out every arm whose mean equals the last arm's, and "
        "sigma_i = sqrt(standard deviation)",
    )

    @model_validator(mode="after")
    def _authors_code_fixes_squared_and_b(self) -> UCBEVParams:
        if self.variant == "authors-code" and (not self.squared or self.b != 1.0):
            raise ValueError('variant = "authors-code" uses the squared H and b = 1; leave squared and b unset')
        return self


#: the authors' code multiplies the oracle a by 8/9 (GapE-V's theta)
AUTHORS_A_FACTOR = 8.0 / 9.0


class UCBEV(ArmwiseKeyPolicy):
    """UCBEV: thresholding with GapE-V's empirical-Bernstein index and an oracle-tuned ``a``
    (docs/algorithms/thresholding.md).

    Source: Mukherjee et al. (IJCAI 2017), section 4 ("identical to UCBE, but with
    ``a = (T - 2K)/H_sigma,1``"), read as GapE-V's empirical-Bernstein index (Gabillon et
    al., NeurIPS 2011): read literally the index would ignore the variances, contradicting
    the paper's experiment 5.  Pull ``argmin_i |mean_i - tau| - width_i``.  The oracle ``a``
    is ``a_scale`` times a value from the true means and variances, one per replica (the
    paper's "UCBEV(1)" is ``a_scale = 1``; its experiment 6 also 4^-1 and 4^4), or ``a`` is
    given.  Analysed for rewards in [0, b]; runs on any real rewards.  Output: the common
    rule ``{i : n_i >= 1, mean_i >= tau}``.

    ``variant``:

    * ``"paper"`` (default): two pulls of each arm first (``T - 2K`` in ``a`` accounts for
      them; requires ``T > 2K``); ``width_i = sqrt(2 a s_i^2 / n_i) + 7 a b / (3 (n_i - 1))``
      with ``s_i^2`` the unbiased sample variance; oracle
      ``a = a_scale (T - 2K) / H_sigma,1`` with
      ``H_sigma,1 = sum_i (sigma_i + sqrt(sigma_i^2 + (16/3) b gap_i))^p / gap_i^2`` over all
      K arms, ``sigma_i^2`` the true variance, ``p = 2`` (``squared``, as GapE-V) or 1 (as
      printed).
    * ``"authors-code"``, the authors' public code: one pull of each arm first;
      ``width_i = sqrt(2 a v_i / n_i) + 7 a / (3 n_i - 1)`` with ``v_i`` the biased empirical
      variance (their bracketing: finite from ``n_i = 1``); oracle
      ``a = a_scale (8/9) (T - 2K) / H`` with
      ``H = sum_i (sigma_i + sqrt(sigma_i^2 + (16/3) gap_i))^2 / gap_i^2`` leaving out every
      arm whose true mean equals the mean of the last arm (arm K), arm K included, and
      ``sigma_i = sqrt(sd_i)``, the square root of the true standard deviation: their code
      draws rewards with the listed value as the standard deviation but computes ``H``
      taking it as a variance.  ``squared`` and
      ``b`` stay at their defaults (True, 1).

    Pending pulls: ``n_i`` in the width counts pulls (observed + pending); the mean and the
    variance use observed rewards; each variant's rule with immediate feedback.
    """

    name = "ucbev"
    Params = UCBEVParams
    objectives = frozenset({Objective.THRESHOLD})
    need = 2

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        self.authors_code = self.params.variant == "authors-code"
        self.need = 1 if self.authors_code else 2
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        why = "a = (8/9)(T - 2K)/H > 0" if self.authors_code else "two initial pulls per arm, and a = (T - 2K)/H_sigma,1 > 0"
        require_budget(self, problem, 2 * k, why)
        self.threshold = threshold_of(self, problem)
        numerator = problem.budget - 2 * k
        if self.authors_code:
            numerator *= AUTHORS_A_FACTOR
        self.a = exploration_parameter(
            self, problem, replicas, what="means and variances", complexity=self._oracle_h_sigma1,
            numerator=numerator, formula="a = (T - 2K)/H_sigma,1",
        )

    def _oracle_h_sigma1(self, truth: Truth) -> np.ndarray:
        if self.authors_code:
            counted, gaps = authors_code_gaps(truth.means, self.threshold)
            sigma = np.sqrt(np.sqrt(truth.variances))  # sqrt of the standard deviation
            terms = (sigma + np.sqrt(sigma**2 + (16.0 / 3.0) * gaps)) ** 2 / gaps**2
            return np.sum(counted * terms, axis=-1)
        gaps = tbp_gaps(truth.means, self.threshold)
        return variance_complexity(gaps, truth.variances, squared=self.params.squared, b=self.params.b)

    def key(self, arm: ArmView) -> np.ndarray:
        """``|mean_i - tau| - width_i``, each variant's width (the class docstring)."""
        a = arm.per_replica(self.a)
        if self.authors_code:
            n = np.maximum(arm.pulls, 1).astype(np.float64)
            width = np.sqrt(2.0 * a * arm.variances(ddof=0) / n) + 7.0 * a / (3.0 * n - 1.0)
        else:
            n = np.maximum(arm.pulls, 2).astype(np.float64)  # the index is read from two results on
            width = np.sqrt(2.0 * a * arm.variances(ddof=1) / n) + 7.0 * a * self.params.b / (3.0 * (n - 1.0))
        return np.abs(arm.means - self.threshold) - width
