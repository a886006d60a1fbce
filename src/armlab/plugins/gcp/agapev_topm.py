"""The greedy-confidence-pursuit paper's "UCB" baseline: A-GapE-V adapted to top-m selection (docs/algorithms/greedy-confidence-pursuit.md)."""

from __future__ import annotations

import numpy as np

from armlab.plugins.fixed_budget.gape import AGapEV, AGapEVParams
from armlab.plugins.fixed_budget.gape_index import At
from armlab.plugins.gcp.arm_rules import GreedyConfidencePursuitParams, GreedyConfidencePursuitRule
from armlab.stats import ArmStats

__all__ = ["AGapEVTopM", "with_prior_pseudo_observations"]


def with_prior_pseudo_observations(stats: ArmStats, at: At = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts, means and unbiased variances ``(R, K)`` of every arm's rewards plus the Beta(1, 1)
    prior's two pseudo-observations (one 1 and one 0), as Bachman & Precup's code keeps them;
    or those of single arms at ``at`` (see :data:`~armlab.plugins.fixed_budget.gape_index.At`).

    The pseudo-observations (mean 1/2, sum of squared deviations 1/2) are merged with the
    observed ``(n, mean, M2)`` by the parallel-variance formula, so counts are at least 2 and
    the Bernstein width stays finite from the first step.
    """
    counts, observed_means, observed_m2 = (stats.counts, stats.means, stats.m2) if at is None else (
        stats.counts.reshape(-1)[at[1]], stats.means.reshape(-1)[at[1]], stats.m2.reshape(-1)[at[1]])
    n = counts.astype(np.float64)
    total = n + 2.0
    delta = 0.5 - observed_means
    means = observed_means + 2.0 * delta / total
    m2 = observed_m2 + 0.5 + delta**2 * n * 2.0 / total
    return total, means, m2 / (total - 1.0)


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
    warmup_observations = 0  # the pseudo-observations make every count valid
    pending_in_width = False  # see "Pending pulls" above

    def sample_statistics(self, stats: ArmStats, at: At = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return with_prior_pseudo_observations(stats, at)

    def choose(self, stats: ArmStats) -> np.ndarray:
        return AGapEV.select(self, stats)
