"""A-GapE-V over several bandits at once: Gab-UCB, and Uni-UCB / MAP-UCB's arm rule.

The greedy-confidence-pursuit paper's "UCB" arm rule is A-GapE-V (Gabillon et al. 2011) with top-m midpoint gaps, in
the form of Bachman & Precup's code (docs/algorithms/fixed-budget.md,
docs/algorithms/greedy-confidence-pursuit.md).  For arm k of bandit g, with ``T`` observations, mean ``mu`` and unbiased variance ``v``
that include two prior pseudo-observations (one 1 and one 0, so ``T >= 2``):

    D = |mu - (mu_(m) + mu_(m+1)) / 2|          gap to the bandit's top-m midpoint
    D+ = D + sqrt(1 / (2T)),  v- = max(0, v - sqrt(2 / (T - 1)))
    H = sum over all bandits and arms of (v- + sqrt(v-^2 + (16/3) b D+))^2 / D+^2
    a = (8/9) (n - 2 sum_g K_g) / H              n = the shared trial budget
    index = -D + sqrt(2 a v / T) + 7 a b / (3 (T - 1)),   b = 1

``H`` (hence ``a``) is estimated over *all* bandits, as the authors' code does for its
multi-bandit runs; the per-arm terms and the index are those of the single-bandit ``agapev``
(:mod:`armlab.plugins.fixed_budget.gape_index`).  :class:`GabUCB` pulls the argmax over all
(bandit, arm) pairs jointly (GapE-V's multi-bandit form, which optimises the minimum
confidence, eq. 1); ``arm_rule = "agapev-joint"`` of ``uniform-bandit`` and ``map-ucb`` takes
the argmax within the bandit they chose, which is the code's Uni-UCB and MAP-UCB (a
single-bandit A-GapE-V policy estimates ``a`` from its own bandit only).

Pending pulls do not enter the statistics, as in the authors' code and docs/algorithms/greedy-confidence-pursuit.md (the index
repeats its choice while feedback is delayed, as the greedy-confidence-pursuit paper notes for UCB rules; the
single-bandit ``agapev`` instead counts them in its width); they do count toward the warm-up.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.complexity import midpoint_gaps
from armlab.errors import ConfigError
from armlab.multibandit import BanditGroup, group_bandits, stack
from armlab.plugins.fixed_budget.gape_index import THETA_V, agapev_complexity_terms, gapev_index
from armlab.plugins.gcp.warmup import WarmUp
from armlab.plugins.interfaces import Allocator, PluginParams
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["AGapEVJoint", "ArmRule", "GabUCB", "agapev_indices"]

#: Who picks the arm inside the chosen bandit: the bandit's policy, or the joint A-GapE-V index.
ArmRule = Literal["policy", "agapev-joint"]


def _with_pseudo_observations(stats: list[ArmStats], group: BanditGroup) -> tuple[np.ndarray, ...]:
    """``T``, mean and unbiased variance ``(R, B_g, K)`` with one 1 and one 0 added per arm."""
    n = stack(stats, group, "counts").astype(np.float64)
    mean = stack(stats, group, "means")
    total = n * mean + 1.0
    squares = stack(stats, group, "m2") + n * mean**2 + 1.0
    t = n + 2.0
    mu = total / t
    return t, mu, np.maximum(squares - t * mu**2, 0.0) / (t - 1.0)


def agapev_indices(stats: list[ArmStats], groups: list[BanditGroup], budget: int, b: float = 1.0) -> list[np.ndarray]:
    """The A-GapE-V index ``(R, B_g, K)`` of every group, ``a`` estimated over all bandits."""
    parts, complexity, total_arms = [], 0.0, 0
    for group in groups:
        t, mu, var = _with_pseudo_observations(stats, group)
        gap = midpoint_gaps(mu, group.problem.top_m)
        complexity = complexity + agapev_complexity_terms(gap, var, t, b).sum(axis=(1, 2))
        total_arms += group.bandits.size * group.n_arms
        parts.append((t, var, gap))
    a = (THETA_V * (budget - 2 * total_arms) / complexity)[:, None, None]
    return [gapev_index(gap, var, t, a, b) for t, var, gap in parts]


def check_budget(name: str, problems: list[Problem]) -> None:
    """``a > 0`` needs the budget to exceed twice the number of arms of all bandits."""
    arms = sum(p.n_arms for p in problems)
    if problems[0].budget <= 2 * arms:
        raise ConfigError(
            f"{name}: A-GapE-V's a = (8/9)(n - 2 * {arms} arms)/H needs a budget n above {2 * arms}, "
            f"got {problems[0].budget}; raise [problem] budget"
        )


class AGapEVJoint:
    """Arms by the joint A-GapE-V index inside the chosen bandits (warm-up arms first).

    Mixed into allocators with an ``arm_rule`` parameter (:data:`ArmRule`) and a
    ``warmup_per_arm`` parameter; they call :meth:`prepare_arms` from ``reset``.  With
    ``arm_rule = "policy"`` :meth:`select_arms` returns ``None`` (the bandits' policies choose).
    """

    params: PluginParams
    problems: list[Problem]
    name: str

    def prepare_arms(self, problems: list[Problem], replicas: int) -> None:
        self._joint = self.params.arm_rule == "agapev-joint"  # type: ignore[attr-defined]
        if not self._joint:
            return
        check_budget(f"allocator {self.name!r} with arm_rule 'agapev-joint'", problems)
        self._arm_groups = group_bandits(problems)
        self._group_of = np.empty(len(problems), dtype=np.int64)
        self._member_of = np.empty(len(problems), dtype=np.int64)
        for g, group in enumerate(self._arm_groups):
            self._group_of[group.bandits] = g
            self._member_of[group.bandits] = np.arange(group.bandits.size)
        self._arm_warmup = WarmUp(self.params.warmup_per_arm, replicas, len(problems))  # type: ignore[attr-defined]

    def select_arms(self, stats: list[ArmStats], bandits: np.ndarray) -> np.ndarray | None:
        if not self._joint:
            return None
        arms = self._arm_warmup.arms(stats, bandits)
        rows = np.flatnonzero((arms < 0) & (bandits >= 0))
        if rows.size:
            chosen = bandits[rows]
            indices = agapev_indices(stats, self._arm_groups, self.problems[0].budget)
            for g, index in enumerate(indices):
                mine = self._group_of[chosen] == g
                arms[rows[mine]] = np.argmax(index[rows[mine], self._member_of[chosen[mine]]], axis=1)
        return arms


class GabUCBParams(PluginParams):
    warmup_per_arm: int = Field(
        20, ge=0, description="round-robin pulls per arm of every bandit before the index starts (code: 20)"
    )


class GabUCB(Allocator):
    """Gab-UCB: GapE-V jointly over all arms of all bandits (Gabillon et al. 2011; the greedy-confidence-pursuit paper section 6).

    Each trial goes to the (bandit, arm) pair with the largest A-GapE-V index, ``a``
    estimated over all bandits (:func:`agapev_indices`), after a round-robin warm-up of
    ``warmup_per_arm`` pulls per arm; ties go to the lowest (bandit, arm).  It chooses arms
    itself (:meth:`select_arms`): the bandits' policies only recommend (pair it with
    ``agapev-topm``, whose MAP answer is the same).  Designed for the *minimum* confidence over
    bandits (eq. 1), so it keeps spending on hard bandits; the greedy-confidence-pursuit paper uses it as a baseline.
    Rewards in [0, 1] (b = 1).  Deviation: the code's variant that halves the budget in one
    entry point is not reproduced (full budget, docs/algorithms/fixed-budget.md).
    """

    name = "gab-ucb"
    Params = GabUCBParams

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        for b, problem in enumerate(problems):
            low, high = problem.reward_range
            if problem.objective not in (Objective.BEST_ARM, Objective.TOP_M) or low < 0.0 or high > 1.0:
                raise ConfigError(
                    f"allocator {self.name!r} identifies best arms or top-m sets of rewards in [0, 1]; "
                    f"bandit {b} has objective {problem.objective.value!r} and rewards in [{low}, {high}]"
                )
        check_budget(f"allocator {self.name!r}", problems)
        self.groups = group_bandits(problems)
        self.warmup = WarmUp(self.params.warmup_per_arm, replicas, len(problems))
        self._arms = np.zeros(replicas, dtype=np.int64)

    def select(self, stats: list[ArmStats]) -> np.ndarray:
        bandits = self.warmup.bandits(stats)
        self._arms = self.warmup.arms(stats, bandits)
        rows = np.flatnonzero(bandits < 0)
        if rows.size:
            best = np.full(rows.size, -np.inf)
            indices = agapev_indices(stats, self.groups, self.problems[0].budget)
            for group, index in zip(self.groups, indices, strict=True):
                flat = index[rows].reshape(rows.size, -1)
                pos = np.argmax(flat, axis=1)
                value = flat[np.arange(rows.size), pos]
                # groups are visited in order of their first bandit, so on a tie across
                # groups compare bandit indices to keep the lowest (bandit, arm)
                bandit = group.bandits[pos // group.n_arms]
                better = (value > best) | ((value == best) & (bandit < bandits[rows]))
                best = np.where(better, value, best)
                bandits[rows[better]] = bandit[better]
                self._arms[rows[better]] = (pos % group.n_arms)[better]
        return bandits

    def select_arms(self, stats: list[ArmStats], bandits: np.ndarray) -> np.ndarray:
        return self._arms
