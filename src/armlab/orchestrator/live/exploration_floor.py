"""The exploration floor of a live experiment and the propensity each dispatch records.

With ``exploration_floor = epsilon`` every dispatch first draws a keyed uniform (seed,
``"exploration-floor"``, trial number): below ``epsilon`` the arm is drawn uniformly from the
bandit's active arms (a second keyed uniform), otherwise the policy's arm is kept.  The draws
are a pure function of the seed and the trial number, so replaying a journal sends every
trial to the same arm.  The arm's logged propensity is then exactly
``(1 - epsilon) p + epsilon / K_active``, ``p`` the policy's own probability of that arm
(:meth:`~armlab.plugins.interfaces.Policy.propensities`): every active arm keeps at least
``epsilon / K_active``, which offline evaluation needs (docs/decision-log.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from armlab.plugins._fast.active_arms import uniform_active_arm
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.interfaces import Policy
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["ExplorationFloor", "LoggedChoice", "chooses_deterministically"]

_ROW = np.zeros(1, dtype=np.int64)


@dataclass(frozen=True)
class LoggedChoice:
    """A dispatch's arm and what the journal records of it: its propensity (``None`` when
    unknown) and, for an estimated one, the number of draws behind it."""

    arm: int
    propensity: float | None = None
    draws: int | None = None


class ExplorationFloor:
    """Mix a policy's choice with a uniform one among the active arms (module docstring)."""

    def __init__(self, epsilon: float, seed: int) -> None:
        self.epsilon = float(epsilon)
        self._rng = KeyedRandom(seed, "exploration-floor", replicas=_ROW)

    def arm(self, trial: int, policy_arm: int, stats: ArmStats) -> int:
        """The arm trial number ``trial`` goes to, given the policy's ``policy_arm``."""
        if self.epsilon == 0.0:
            return policy_arm
        u = self._rng.uniform(trial, 2)
        if u[0, 0] >= self.epsilon:
            return policy_arm
        return int(uniform_active_arm(stats, u[:, 1])[0])

    def logged(self, arm: int, policy: Policy | None, stats: ArmStats, policy_arm: int,
               deterministic: bool = False) -> LoggedChoice:
        """``arm`` with its propensity under the floor, from ``policy``'s own propensities
        given the arm ``policy_arm`` its ``select`` just returned (``None`` for a policy that
        did not choose the arm alone: a joint allocator's).  ``deterministic``: the policy is
        one whose propensities are 1 at its choice (:func:`chooses_deterministically`), which
        needs no call."""
        if policy is None:
            return LoggedChoice(arm)
        if deterministic:
            p_arm, draws = (1.0 if arm == policy_arm else 0.0), None
            if self.epsilon == 0.0:
                return _certain(arm, p_arm)
        else:
            p, draws = policy.propensities(stats, np.array([policy_arm], dtype=np.int64))
            if p is None:
                return LoggedChoice(arm)
            p_arm = float(p[0, arm])
        if self.epsilon == 0.0:  # the formula below with epsilon 0, without summing the active arms
            return LoggedChoice(arm, min(p_arm, 1.0), draws)
        active = stats.active[0]
        floored = (1.0 - self.epsilon) * p_arm + self.epsilon * float(active[arm]) / int(active.sum())
        return LoggedChoice(arm, min(floored, 1.0), draws)


@functools.lru_cache(maxsize=4096)
def _certain(arm: int, propensity: float) -> LoggedChoice:
    """A deterministic policy's choice of ``arm`` without a floor (``propensity`` 1.0 at its
    choice, 0.0 elsewhere): one frozen value per pair, made once, not at every dispatch."""
    return LoggedChoice(arm, propensity)


def chooses_deterministically(policy: Policy) -> bool:
    """Whether ``policy``'s propensities are exactly 1 at the arm its ``select`` returned (and 0
    elsewhere) whatever the statistics: an index policy with lowest-index ties that keeps
    :meth:`IndexPolicy.propensities <armlab.plugins.index_policy.IndexPolicy.propensities>`.
    Such a dispatch's propensity then costs no call (the journaled value is the same)."""
    return type(policy).propensities is IndexPolicy.propensities and policy.tie_rng() is None  # type: ignore[attr-defined]
