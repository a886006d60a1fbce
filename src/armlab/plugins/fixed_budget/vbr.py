"""VBR, Variance-Based Rejects (Faella, Finzi & Sauro, ECAI 2020): PROVISIONAL reconstruction."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab.plugins.fixed_budget.successive_rejects import SuccessiveRejects
from armlab.plugins.interfaces import PluginParams
from armlab.stats import ArmStats

__all__ = ["VBR"]


class VBRParams(PluginParams):
    gamma: float = Field(
        1.96, gt=0,
        description="Gaussian quantile of the confidence bounds mean +- gamma s / sqrt(n) (the heterogeneous-variance paper: 1.96)",
    )


class VBR(SuccessiveRejects):
    """VBR (provisional): Successive Rejects' schedule; after each phase, reject the surviving
    arm with the smallest upper bound ``mean_i + gamma s_i / sqrt(n_i)``.

    UNVERIFIED, PROVISIONAL: the definition of Faella, Finzi & Sauro ("Rapidly finding the
    best arm using variance", ECAI 2020) could not be obtained (no full text, no code).  This
    is armlab's reconstruction (docs/algorithms/fixed-budget.md) from
    what the heterogeneous-variance paper says: a variance-using variant of Successive Rejects with K - 1 phases, one
    rejection per phase, and a Gaussian quantile ``gamma = 1.96`` putting each mean inside its
    bounds with probability 0.95.  Replace it when the paper is available, and report any
    result obtained with it as provisional.

    ``s_i`` is the unbiased sample standard deviation and ``n_i`` the observed count
    (cumulative statistics; ``s_i = 0`` while ``n_i < 2``).  Ties: smaller mean rejected, then
    the lowest index.  Gaussian noise motivates ``gamma``; runs on any rewards.  Pending pulls:
    as Successive Rejects (schedule counts them, bounds use observed results only).
    """

    name = "vbr"
    Params = VBRParams

    def rejection_keys(self, stats: ArmStats) -> list[np.ndarray]:
        seen = stats.counts > 0
        width = np.zeros_like(stats.means)
        np.divide(np.sqrt(stats.variances(ddof=1)), np.sqrt(stats.counts), out=width, where=seen)
        upper = np.where(seen, stats.means + self.params.gamma * width, np.inf)
        return [upper, np.where(seen, stats.means, np.inf)]
