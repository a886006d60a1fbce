"""UCB-E (Audibert, Bubeck & Munos 2010) for best-arm identification and its thresholding form."""

from __future__ import annotations

import numpy as np

from armlab.complexity import best_arm_gaps, h1, tbp_gaps
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


class UCBE(ArmwiseKeyPolicy):
    """UCB-E with width ``sqrt(a / n_i)``, after one pull of each arm.

    * best-arm (Audibert, Bubeck & Munos, COLT 2010, section 3.2; sheet 3.2): pull
      ``argmax_i mean_i + sqrt(a / n_i)``; recommend the largest empirical mean.
    * threshold (seed 000's adaptation; sheet 2.3): pull ``argmin_i |mean_i - tau| - sqrt(a / n_i)``;
      output the common rule ``{i : n_i >= 1, mean_i >= tau}``.

    ``a`` is given, or the oracle ``a_scale * (T - K) / H1`` with ``H1 = sum_i gap_i^-2`` of the
    true means (thresholding gaps ``|mu_i - tau|``, or best-arm gaps), one value per replica.
    The oracle form needs a simulated source and fails on an arm exactly at the threshold
    (H1 infinite).  Analysed for rewards in [0, 1]; runs on any real rewards.  Deviation from
    the authors' code: H1 sums over all K arms (their code skips one, sheet 2.3).

    Pending pulls: ``n_i`` in the width counts pulls (observed + pending), means use
    observed rewards; identical to the paper with immediate feedback.
    """

    name = "ucbe"
    Params = OracleIndexParams
    objectives = frozenset({Objective.THRESHOLD, Objective.BEST_ARM})

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        k = problem.n_arms
        require_budget(self, problem, k, "one initial pull per arm, and a = (T - K)/H1 > 0")
        self.threshold = threshold_of(self, problem) if problem.objective is Objective.THRESHOLD else None
        self.a = exploration_parameter(
            self, problem, replicas, what="means", complexity=self._oracle_h1,
            numerator=problem.budget - k, formula="a = (T - K)/H1",
        )

    def _oracle_h1(self, truth: Truth) -> np.ndarray:
        if self.threshold is None:
            return h1(best_arm_gaps(truth.means))
        return h1(tbp_gaps(truth.means, self.threshold))

    def key_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Index to minimise: ``|mean - tau| - w`` or ``-(mean + w)``, ``w = sqrt(a/n)``."""
        _, pulls, means = gathered(stats, flat)
        width = np.sqrt(self.a[rows] / np.maximum(pulls, 1))
        if self.threshold is None:
            return -(means + width)
        return np.abs(means - self.threshold) - width
