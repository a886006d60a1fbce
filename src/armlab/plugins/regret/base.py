"""What the cumulative-regret policies share: parameters, time indices, cached per-arm terms.

Time conventions (docs/algorithms/regret.md): decision ``t`` (1-based) is the next trial of a
replica, ``t = stats.dispatched + 1``; ``n = stats.observed`` is the number of rewards folded
in so far (``t - 1`` under immediate feedback).  Formulas written with "the number of pulls
so far" use ``n``; formulas written with the decision index use ``t``.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import partial
from typing import ClassVar

import numpy as np

from armlab.errors import ConfigError
from armlab.plugins._fast.warm_arms import WarmArms
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.selection import TieBreak, tie_break_field
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["IndexPolicy", "RegretParams", "decision_index", "require_unit_rewards"]


class RegretParams(PluginParams):
    """Parameters every index policy of the regret suite has."""

    tie_break: TieBreak = tie_break_field()


def decision_index(stats: ArmStats) -> np.ndarray:
    """``t`` per replica: 1 + trials started so far, as floats ``(R,)``."""
    return stats.dispatched + 1.0


def require_unit_rewards(problem: Problem, policy: str, alternative: str) -> None:
    """Raise :class:`ConfigError` unless the source guarantees rewards in [0, 1]."""
    low, high = problem.reward_range
    if low < 0.0 or high > 1.0:
        raise ConfigError(
            f"{policy}: this variant needs rewards in [0, 1], but source {problem.source!r} produces "
            f"rewards in [{low}, {high}]; {alternative}"
        )


class IndexPolicy(Policy):
    """One pull of each arm (lowest index first), then the active arm of largest index.

    Subclasses implement :meth:`index` from cached per-arm terms.  The base keeps
    ``inv_n = 1 / N_i`` and ``inv_sqrt_n = 1 / sqrt(N_i)`` (0 before the first observation),
    refreshed in :meth:`update` only for the arms that just received a result, so a bonus
    ``sqrt(c_t / N_i)`` costs one multiplication per step.  Pending pulls: an arm whose first result is
    still in flight is not pulled again (see
    :func:`~armlab.plugins.selection.select_by_index`); otherwise pending pulls do not
    enter the statistics.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    Params: ClassVar[type[PluginParams]] = RegretParams
    objectives = frozenset({Objective.REGRET})
    #: Whether the policy reads the horizon ``T`` (``problem.budget``) in advance.
    needs_horizon: ClassVar[bool] = False

    def reset(self, problem: Problem, replicas: int, rng: KeyedRandom) -> None:
        super().reset(problem, replicas, rng)
        if self.pulls_each_arm_first() and problem.budget < problem.n_arms:
            raise ConfigError(
                f"{self.name}: budget {problem.budget} is smaller than the number of arms "
                f"{problem.n_arms}; the policy starts with one pull of each arm, so use a budget >= {problem.n_arms}"
            )
        self.inv_n = np.zeros((replicas, problem.n_arms))
        self.inv_sqrt_n = np.zeros((replicas, problem.n_arms))
        self._warmup = WarmArms(need=1)

    def pulls_each_arm_first(self) -> bool:
        """Whether the policy starts with one pull of each arm (then it needs ``T >= K``)."""
        return True

    def update(self, stats: ArmStats, rows, arms, rewards) -> None:
        inv = 1.0 / stats.counts[rows, arms]
        self.inv_n[rows, arms] = inv
        self.inv_sqrt_n[rows, arms] = np.sqrt(inv)

    @abstractmethod
    def index(self, stats: ArmStats) -> np.ndarray:
        """The index ``(R, K)``; entries of arms without observations are ignored."""

    def select(self, stats: ArmStats) -> np.ndarray:
        """:func:`~armlab.plugins.selection.select_by_index` of :meth:`index`, a plain
        argmax once every arm of every replica has a result and is active (:class:`WarmArms`);
        the index is not computed while every replica is still in its first-pull round robin."""
        rng = self.rng if self.params.tie_break == "random" else None
        return self._warmup.select(stats, partial(self.index, stats), rng)
