"""Several bandits sharing one trial budget (greedy confidence pursuit, Bachman & Precup).

A multi-bandit experiment lists its bandits in ``[[bandits]]`` (:class:`armlab.config.BanditEntry`).
The engine keeps one :class:`~armlab.stats.ArmStats` ``(R, K_b)`` and one policy instance per
bandit, so arm counts may differ; an :class:`~armlab.plugins.interfaces.Allocator` picks the
bandit of every trial.  This module holds what the bandits' descriptions add to a
:class:`~armlab.problem.Problem` (the targeted arm of the greedy-confidence-pursuit paper's section 5.1) and the stacked
view allocators compute on: bandits with the same arm count (and whatever else a rule needs
alike, e.g. ``top_m``) form a group whose statistics stack into ``(R, B_g, K)`` arrays, so a
rule is one vectorized computation per group instead of one per bandit.  Grouping instead of
padding to ``K_max`` keeps the arithmetic free of masks; the paper's experiments (equal arm
counts) are a single group.  The stacked arrays are copies made on demand, never state.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from armlab.problem import Problem
from armlab.stats import ArmStats

__all__ = ["BanditGroup", "BanditProblem", "group_bandits", "stack", "target_arms", "target_is_best"]


@dataclass(frozen=True)
class BanditProblem(Problem):
    """A :class:`Problem` of one bandit among several; ``target_arm`` (0-based) is the arm a
    targeted experiment hopes is best (``None``: no target)."""

    target_arm: int | None = None


def target_arms(problems: list[Problem]) -> list[int | None]:
    """The target arm of each bandit (``None`` where it has none)."""
    return [getattr(problem, "target_arm", None) for problem in problems]


def target_is_best(problems: list[Problem]) -> np.ndarray:
    """Boolean ``(R, B)``: bandit ``b``'s target arm is its (unique or tied) best arm in
    replica ``r``.  Bandits without a target are ``False``; needs the truth."""
    columns = []
    for problem, target in zip(problems, target_arms(problems), strict=True):
        truth = problem.require_truth("targeted metrics", "means")
        if target is None:
            columns.append(np.zeros(truth.means.shape[0], dtype=bool))
        else:
            columns.append(truth.means[:, target] >= truth.means.max(axis=1))
    return np.stack(columns, axis=1)


@dataclass(frozen=True)
class BanditGroup:
    """Bandits ``bandits`` (indices, ascending) that share ``n_arms`` and ``key``."""

    bandits: np.ndarray
    n_arms: int
    key: Hashable
    problem: Problem  # the first member's problem (its shared fields describe the group)


def group_bandits(
    problems: list[Problem], key: Callable[[Problem], Hashable] = lambda p: p.top_m
) -> list[BanditGroup]:
    """Group bandits by arm count and ``key(problem)``, in order of first appearance."""
    members: dict[tuple[int, Hashable], list[int]] = {}
    for b, problem in enumerate(problems):
        members.setdefault((problem.n_arms, key(problem)), []).append(b)
    return [
        BanditGroup(np.asarray(indices), n_arms, k, problems[indices[0]])
        for (n_arms, k), indices in members.items()
    ]


def stack(stats: list[ArmStats], group: BanditGroup, field: str) -> np.ndarray:
    """``(R, B_g, K)`` copy of the per-arm array ``field`` (e.g. ``"counts"``) of a group."""
    return np.stack([getattr(stats[b], field) for b in group.bandits], axis=1)
