"""Uniform allocation: round robin over the active arms."""

from __future__ import annotations

import numpy as np

from armlab.plugins.interfaces import Policy
from armlab.stats import ArmStats


class Uniform(Policy):
    """Round robin: pull the active arm with the fewest pulls (observed + pending), lowest
    index first, i.e. arm ``(t - 1) mod K`` at step ``t``.  Recommends by empirical means.

    Baseline "Unif" of seed 004 and "UA" of seed 000 (there in its round-robin form).
    Pending pulls count, so delayed feedback does not change the schedule.
    """

    name = "uniform"

    def select(self, stats: ArmStats) -> np.ndarray:
        return np.argmin(np.where(stats.active, stats.pulls, np.iinfo(np.int64).max), axis=1)
