"""Greedy confidence pursuit's bound (eq. 3) kept per (replica, bandit) across several bandits.

Allocators filter bandits by it (Alg. 3 only pursues bandits with ``rho < tau``) and the
multi-bandit completion metric records it every trial.  Recomputing every bandit each step
would cost B bound evaluations per step; instead :class:`ConfidenceTracker` recomputes only
the (replica, bandit) pairs whose statistics received results since the last refresh, in one
vectorized evaluation per group of alike bandits (:func:`armlab.multibandit.group_bandits`).
The bound itself is :func:`armlab.plugins.gcp.confidence.confidence_of`, the same
definition single-bandit runs report (Beta(1, 1) posterior for rewards in [0, 1]).
"""

from __future__ import annotations

import numpy as np

from armlab.multibandit import group_bandits
from armlab.plugins.gcp.confidence import confidence_of
from armlab.problem import Problem
from armlab.stats import ArmStats

__all__ = ["ConfidenceTracker"]

_FIELDS = ("counts", "means", "m2")


class ConfidenceTracker:
    """The eq. (3) bound ``rho`` ``(R, B)`` of ``replicas`` runs over the bandits ``problems``."""

    def __init__(self, problems: list[Problem], replicas: int) -> None:
        self.groups = group_bandits(
            problems, key=lambda p: (p.top_m, p.objective, p.reward_range, p.threshold)
        )
        self.rho = np.zeros((replicas, len(problems)))
        self._seen = np.full((replicas, len(problems)), -1, dtype=np.int64)

    def __repr__(self) -> str:
        return f"ConfidenceTracker(replicas={self.rho.shape[0]}, bandits={self.rho.shape[1]})"

    def refresh(self, stats: list[ArmStats]) -> np.ndarray:
        """Bring ``rho`` up to date with ``stats`` and return it (a view; do not modify)."""
        observed = np.stack([st.observed for st in stats], axis=1)
        changed = observed != self._seen
        if not changed.any():
            return self.rho
        for group in self.groups:
            rows, members = np.nonzero(changed[:, group.bandits])
            if rows.size == 0:
                continue
            gathered = ArmStats(rows.size, group.n_arms)
            for member in np.unique(members):  # usually few bandits changed: gather, not stack
                mine = members == member
                source = stats[group.bandits[member]]
                for field in _FIELDS:
                    getattr(gathered, field)[mine] = getattr(source, field)[rows[mine]]
            rho = confidence_of(group.problem, gathered, np.arange(rows.size))
            self.rho[rows, group.bandits[members]] = rho
        self._seen = observed
        return self.rho
