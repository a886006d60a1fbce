"""What the cumulative-regret policies share: their parameters, the decision index, and two
checks of the problem at reset.

Time conventions (docs/algorithms/regret.md): decision ``t`` (1-based) is the next trial of a
replica, ``t = stats.dispatched + 1``; ``n = stats.observed`` is the number of rewards folded
in so far (``t - 1`` under immediate feedback).  Formulas written with "the number of pulls
so far" use ``n``; formulas written with the decision index use ``t``.

The index policies of the family (UCB-V, EUCBV, MOSS, KL-UCB, Bayes-UCB, OCUCB) are
:class:`~armlab.plugins.index_policy.IndexPolicy` subclasses: one pull of each arm first, then
the active arm of largest index.
"""

from __future__ import annotations

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins.interfaces import PluginParams
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.problem import Problem
from armlab.stats import ArmStats

__all__ = ["RegretParams", "decision_index", "require_budget_for_first_pulls", "require_unit_rewards"]


class RegretParams(PluginParams):
    """Parameters every index policy of the regret suite has."""

    tie_break: TieBreak = tie_break_field()


def decision_index(stats: ArmStats) -> np.ndarray:
    """``t`` per replica: 1 + trials started so far, as floats ``(R,)``."""
    return stats.dispatched + 1.0


def require_budget_for_first_pulls(problem: Problem, policy: str) -> None:
    """Raise :class:`ConfigError` if the budget ``T`` cannot pay one pull of each arm (``T < K``)."""
    if problem.budget < problem.n_arms:
        raise ConfigError(
            f"{policy}: budget {problem.budget} is smaller than the number of arms {problem.n_arms}; "
            f"the policy starts with one pull of each arm, so use a budget >= {problem.n_arms}"
        )


def require_unit_rewards(problem: Problem, policy: str, alternative: str) -> None:
    """Raise :class:`ConfigError` unless the source guarantees rewards in [0, 1]."""
    low, high = problem.reward_range
    if low < 0.0 or high > 1.0:
        raise ConfigError(
            f"{policy}: this variant needs rewards in [0, 1], but source {problem.source!r} produces "
            f"rewards in [{low}, {high}]; {alternative}"
        )
