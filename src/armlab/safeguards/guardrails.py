"""Guardrail metrics: retire an arm whose metric mean is surely beyond a bound.

For each ``[[guardrails]]`` entry the monitor keeps an anytime-valid confidence sequence of
every arm's metric mean (:mod:`armlab.safeguards.confidence_sequences`: empirical-Bernstein
for a declared ``range``, normal mixture for a declared ``scale``), each arm at level
``1 - delta / K``.  An arm is to be retired once its sequence lies wholly beyond the bound:
``low > max`` (or ``high < min``).  On the event that every sequence covers its mean, which
has probability at least ``1 - delta`` at all times at once, no arm whose mean is within the
bound is ever retired: the chance that a guardrail retires some compliant arm, however long
the experiment runs, is at most ``delta``.
"""

from __future__ import annotations

import numpy as np

from armlab.safeguards.config import GuardrailConfig
from armlab.safeguards.confidence_sequences import BoundedSequences, SubGaussianSequences

__all__ = ["GuardrailMonitor"]


class GuardrailMonitor:
    """One guardrail over ``replicas`` copies of a ``K``-armed bandit."""

    def __init__(self, config: GuardrailConfig, replicas: int, n_arms: int) -> None:
        self.config = config
        if config.range is not None:
            self.sequences = BoundedSequences(replicas, n_arms, config.delta, config.range)
        else:
            self.sequences = SubGaussianSequences(replicas, n_arms, config.delta, config.scale)

    def observe(self, rows: np.ndarray, arms: np.ndarray, values: np.ndarray) -> None:
        """Fold one metric value per row (``rows`` unique), O(1) each."""
        self.sequences.observe(rows, arms, values)

    def observe_one(self, arm: int, value: float, replica: int = 0) -> None:
        """Fold one metric value of one arm (the live experiment's path)."""
        self.sequences.observe_one(arm, value, replica)

    def breached(self) -> np.ndarray:
        """``(R, K)``: arms whose sequence lies wholly beyond the bound."""
        seq, bound = self.sequences, self.config.bound
        beyond = seq.low > bound if self.config.side == "max" else seq.high < bound
        return beyond & (seq.counts > 0)

    def evidence(self, arm: int, replica: int = 0) -> dict:
        """What the journal and the retirement event record: the interval, n and the bound."""
        seq = self.sequences
        return {
            "metric": self.config.metric,
            self.config.side: self.config.bound,
            "delta": self.config.delta,
            "interval": [float(seq.low[replica, arm]), float(seq.high[replica, arm])],
            "n": int(seq.counts[replica, arm]),
        }
