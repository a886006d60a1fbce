"""What a policy is asked to solve: objective, budget, arms, and (when simulated) the truth."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

__all__ = ["Objective", "Problem", "Truth"]


class Objective(str, enum.Enum):
    """The four goals armlab measures."""

    REGRET = "regret"  # maximise cumulative reward; no recommendation
    BEST_ARM = "best-arm"  # identify the arm with the largest mean
    TOP_M = "top-m"  # identify the m arms with the largest means (epsilon-tolerant)
    THRESHOLD = "threshold"  # identify every arm whose mean is >= the threshold


@dataclass(frozen=True)
class Truth:
    """True arm means and variances of a simulated source, per replica: arrays ``(R, K)``.

    Live sources have no truth; policies that need oracle inputs then refuse to start.
    """

    means: np.ndarray
    variances: np.ndarray

    def gaps(self) -> np.ndarray:
        """Regret gaps ``max_j mu_j - mu_i``, shape ``(R, K)``."""
        return self.means.max(axis=1, keepdims=True) - self.means


@dataclass(frozen=True)
class Problem:
    """The task one bandit poses to its policy.

    ``budget`` is the number of trials; ``top_m``/``epsilon`` apply to top-m (and best-arm,
    with ``top_m = 1``); ``threshold`` to thresholding; ``delta`` to fixed-confidence rules.
    ``truth`` is ``None`` for live sources; ``reward_range`` is the support the source guarantees.
    """

    objective: Objective
    budget: int
    n_arms: int
    top_m: int = 1
    epsilon: float = 0.0
    threshold: float | None = None
    delta: float | None = None
    truth: Truth | None = None
    source: str = "?"
    reward_range: tuple[float, float] = (-float("inf"), float("inf"))

    def require_truth(self, policy: str, what: str, parameter: str | None = None) -> Truth:
        """Return the truth or raise the error an oracle policy needs on a live source; a
        policy that needs the truth only for the default of ``parameter`` names it (setting
        it is the fix)."""
        if self.truth is None:
            from armlab.errors import ConfigError

            fix = (
                f"Set {parameter} in the policy's table (the truth is then not needed), or pick a policy "
                "that does not need oracle inputs." if parameter else "Pick a policy that does not need oracle inputs."
            )
            raise ConfigError(
                f"policy {policy!r} needs the source's true {what}, but source "
                f"{self.source!r} does not know them (live sources never do). {fix}"
            )
        return self.truth
