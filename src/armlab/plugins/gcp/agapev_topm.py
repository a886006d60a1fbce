"""The greedy-confidence-pursuit paper's "UCB" baseline: A-GapE-V adapted to top-m selection (docs/algorithms/greedy-confidence-pursuit.md)."""

from __future__ import annotations

import numpy as np

from armlab.plugins._fast.gap_terms import EVERY_ARM, Arms
from armlab.plugins.fixed_budget.gape import AGapEV, AGapEVParams, SampleStatistics
from armlab.plugins.gcp.arm_rules import (
    GreedyConfidencePursuitParams,
    GreedyConfidencePursuitRule,
)
from armlab.stats import ArmStats

__all__ = ["AGapEVTopM", "with_prior_pseudo_observations"]


def with_prior_pseudo_observations(stats: ArmStats, arms: Arms = EVERY_ARM) -> SampleStatistics:
    """Counts, means and unbiased variances of ``arms``' rewards (every arm: ``(R, K)``) plus the
    Beta(1, 1) prior's two pseudo-observations (one 1 and one 0), as Bachman & Precup's code
    keeps them.

    The pseudo-observations (mean 1/2, sum of squared deviations 1/2) are merged with the
    observed ``(n, mean, M2)`` by the parallel-variance formula, so counts are at least 2 and
    the Bernstein width stays finite from the first step.
    """
    n = arms.of(stats.counts).astype(np.float64)
    observed_means, observed_m2 = arms.of(stats.means), arms.of(stats.m2)
    total = n + 2.0
    delta = 0.5 - observed_means
    means = observed_means + 2.0 * delta / total
    m2 = observed_m2 + 0.5 + delta**2 * n * 2.0 / total
    return SampleStatistics(total, means, m2 / (total - 1.0))


class AGapEVTopMParams(AGapEVParams, GreedyConfidencePursuitParams):
    """A-GapE-V's parameters (midpoint gaps by default) plus the greedy-confidence-pursuit paper's warm-up."""


class AGapEVTopM(GreedyConfidencePursuitRule, AGapEV):
    """The greedy-confidence-pursuit paper's "UCB" arm rule (Bachman & Precup, eq. 11 and footnote 5): A-GapE-V with the
    gaps redefined for top-m as distances to the midpoint of the m-th and (m+1)-th means.

    The index, ``H-hat`` and ``a = (8/9)(n - 2K) / H-hat`` are those of
    :class:`~armlab.plugins.fixed_budget.gape.AGapEV` (docs/algorithms/fixed-budget.md, n = the experiment's
    horizon, b = 1); this class adds the greedy-confidence-pursuit paper's conventions: counts, means and variances
    include the prior's two pseudo-observations (docs/algorithms/greedy-confidence-pursuit.md, as the authors' code), a
    round-robin warm-up of ``warmup_per_arm`` pulls per arm (code: 10), and the MAP top-m
    group as the answer.

    Rewards in [0, 1].  Pending pulls: not counted anywhere after the warm-up, i.e. the
    width shrinks only with observed rewards (docs/algorithms/greedy-confidence-pursuit.md: the greedy-confidence-pursuit paper's rules select from the
    observed statistics, so with delayed feedback this rule repeats one arm until results
    arrive).  This differs from the plain ``agapev`` policy, whose width counts pending pulls.
    """

    honours_inactive_arms = False  # its warm-up and posterior rule pull every arm

    name = "agapev-topm"
    Params = AGapEVTopMParams
    need = 0  # the pseudo-observations make every count valid
    pending_in_width = False  # see "Pending pulls" above

    def sample_statistics(self, stats: ArmStats, arms: Arms = EVERY_ARM) -> SampleStatistics:
        return with_prior_pseudo_observations(stats, arms)

    def choose(self, stats: ArmStats) -> np.ndarray:
        return AGapEV.select(self, stats)
