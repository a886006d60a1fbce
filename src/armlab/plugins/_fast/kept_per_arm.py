"""The protocol of the speed helpers that keep a value per arm of every replica between steps."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from armlab.stats import ArmStats

__all__ = ["KeptPerArm"]


class KeptPerArm(ABC):
    """A helper that keeps ``(R, K)`` values between steps instead of recomputing them, told
    what changed by two verbs, the same on every such helper:

    * :meth:`observed`: results of some arms were just folded into the statistics (each
      step changes one arm per replica, so only those entries are recomputed);
    * :meth:`refresh_rows`: something else of some replicas changed (a constant of theirs
      such as a round or a stage, arms eliminated or restarted), so every arm of theirs is
      recomputed before it is read again.

    A helper that cannot know of a change by itself (a dispatch while results are in flight)
    recomputes what it must when read; each helper's docstring says when.
    """

    @abstractmethod
    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Results of ``arms`` of replicas ``rows`` (unique) were just folded into ``stats``."""

    @abstractmethod
    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Every arm of replicas ``rows`` may have changed: recompute them before the next read."""
