"""UCB-E (Audibert, Bubeck & Munos 2010) for best-arm identification and its thresholding form."""

from __future__ import annotations

import numpy as np

from armlab.complexity import best_arm_gaps, h1, tbp_gaps
from armlab.errors import ConfigError
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


class UCBEParams(OracleIndexParams):
    variant: Variant = variant_field(
        "the oracle H1 sums over all K arms",
        "H1 sums only over the arms whose true mean differs from the last arm's (thresholding only)",
    )


class UCBE(ArmwiseKeyPolicy):
    """UCB-E with width ``sqrt(a / n_i)``, after one pull of each arm (docs/algorithms/thresholding.md).

    * best-arm (Audibert, Bubeck & Munos, COLT 2010, section 3.2): pull
      ``argmax_i mean_i + sqrt(a / n_i)``; recommend the largest empirical mean.
    * threshold (Mukherjee et al.'s adaptation, IJCAI 2017): pull
      ``argmin_i |mean_i - tau| - sqrt(a / n_i)``; output the common rule
      ``{i : n_i >= 1, mean_i >= tau}``.

    ``a`` is given, or the oracle ``a_scale * (T - K) / H1`` with ``H1 = sum_i gap_i^-2`` of the
    true means (thresholding gaps ``|mu_i - tau|``, or best-arm gaps), one value per replica.
    The oracle form needs a simulated source and fails on an arm exactly at the threshold
    (H1 infinite).  Analysed for rewards in [0, 1]; runs on any real rewards.

    ``variant`` (thresholding; the index is the same in both):

    * ``"paper"`` (default): ``H1`` sums over all K arms.
    * ``"authors-code"``: ``H1`` leaves out every arm whose true mean equals the mean of the
      last arm (arm K), arm K included: it sums over the arms whose mean differs from arm
      K's.  In Mukherjee et al.'s experiments 1-5 the last arm is one of the 90 arms at 0.4,
      so ``H1`` covers arms 1-10 only and ``a`` is about ten times larger than the paper's.

    Pending pulls: ``n_i`` in the width counts pulls (observed + pending), means use
    observed rewards; identical to the paper with immediate feedback.
    """

    name = "ucbe"
    Params = UCBEParams
    objectives = frozenset({Objective.THRESHOLD, Objective.BEST_ARM})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        require_budget(self, problem, k, "one initial pull per arm, and a = (T - K)/H1 > 0")
        self.threshold = threshold_of(self, problem) if problem.objective is Objective.THRESHOLD else None
        if self.params.variant == "authors-code" and self.threshold is None:
            raise ConfigError(
                f'{self.name}: variant = "authors-code" is the thresholding code of Mukherjee et al.; '
                f'for best-arm identification use variant = "paper"'
            )
        self.a = exploration_parameter(
            self, problem, replicas, what="means", complexity=self._oracle_h1,
            numerator=problem.budget - k, formula="a = (T - K)/H1",
        )

    def _oracle_h1(self, truth: Truth) -> np.ndarray:
        if self.threshold is None:
            return h1(best_arm_gaps(truth.means))
        if self.params.variant == "authors-code":
            # H1 = sum 1/(tau - mu_i)^2 over the arms whose mean differs from the last arm's
            counted, gaps = authors_code_gaps(truth.means, self.threshold)
            return np.sum(counted / gaps**2, axis=-1)
        return h1(tbp_gaps(truth.means, self.threshold))

    def key(self, arm: ArmView) -> np.ndarray:
        """``|mean_i - tau| - sqrt(a / n_i)``; best-arm: ``-(mean_i + sqrt(a / n_i))``."""
        width = np.sqrt(arm.per_replica(self.a) / np.maximum(arm.pulls, 1))
        if self.threshold is None:
            return -(arm.means + width)
        return np.abs(arm.means - self.threshold) - width
