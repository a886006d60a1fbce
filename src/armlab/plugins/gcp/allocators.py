"""The greedy-confidence-pursuit paper's budget allocators: which bandit gets the next trial (Bachman & Precup).

Greedy confidence pursuit shares one trial budget among B bandits and maximises the number
of bandits whose top-m set reaches the confidence target (eq. 2).  The allocators here pick
the bandit; the bandit's own policy picks the arm (``gab-ucb``, which ranks all arms of all
bandits at once, lives in :mod:`armlab.plugins.gcp.joint_ucb`).  Definitions:
docs/algorithms/greedy-confidence-pursuit.md.

``gcp-bayes``, ``gcp-targeted`` and ``map-ucb`` share :class:`PursuitAllocator`: a round-robin
warm-up over bandits until every arm of every bandit has ``warmup_per_arm`` pulls (the
authors' code: 20), then only bandits whose eq. (3) confidence is below
``confidence_target`` are pursued; when none is left the bandit is drawn uniformly (code).
``bandit_epsilon`` reproduces the code's mixing (a uniformly random bandit with that
probability; the paper has none).  All randomness is keyed by (seed, replica, trials
dispatched so far), so ``select`` is repeatable and replicas are independent.

Pending pulls count toward the warm-up (a schedule) but not toward the posteriors or the
confidence bound, which use observed results only: with delayed feedback posterior sampling
keeps spreading trials, while the plug-in MAP-UCB keeps its stale choice probabilities.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Literal

import numpy as np
from pydantic import Field

from armlab.errors import ConfigError
from armlab.multibandit import BanditGroup, group_bandits, stack, target_arms
from armlab.plugins.gcp.costs import completion_cost
from armlab.plugins.gcp.joint_ucb import AGapEVJoint, ArmRule
from armlab.plugins.gcp.tracking import ConfidenceTracker
from armlab.plugins.gcp.warmup import WarmUp
from armlab.plugins.interfaces import Allocator, PluginParams
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["GCPBayes", "MAPUCB", "PursuitAllocator", "TargetedGCPBayes", "UniformBandit", "total_trials"]


def total_trials(stats: list[ArmStats]) -> np.ndarray:
    """Trials each replica has dispatched over all bandits ``(R,)``: the allocators' clock."""
    return np.sum([st.dispatched for st in stats], axis=0)


def posterior_parameters(stats: list[ArmStats], group: BanditGroup) -> tuple[np.ndarray, np.ndarray]:
    """Beta(1, 1)-prior posterior parameters ``(R, B_g, K)`` from observed rewards in [0, 1]
    (successes = sum of rewards, as in the arm rules of :mod:`armlab.plugins.gcp.arm_rules`)."""
    counts = stack(stats, group, "counts").astype(np.float64)
    successes = counts * stack(stats, group, "means")
    return 1.0 + successes, 1.0 + counts - successes


class PursuitParams(PluginParams):
    warmup_per_arm: int = Field(
        20, ge=0, description="round-robin pulls per arm of every bandit before the rule starts (code: 20)"
    )
    confidence_target: float = Field(
        0.98, gt=0, lt=1,
        description="tau_sel: bandits whose eq. (3) confidence reached it are not pursued "
        "(paper: the target 0.98; code: 0.985 in Figs. 4a and 5)",
    )
    bandit_epsilon: float = Field(
        0.0, ge=0, le=1,
        description="probability of a uniformly random bandit instead of the rule (code: 0.5; paper: 0)",
    )


class PursuitAllocator(Allocator):
    """Shared machinery of the confidence-pursuing allocators (warm-up, filter, mixing).

    Subclasses implement :meth:`choose`: the rule's bandit per replica given the pursued
    bandits (confidence below target).
    """

    Params = PursuitParams

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        for b, problem in enumerate(problems):
            if problem.objective not in (Objective.BEST_ARM, Objective.TOP_M):
                raise ConfigError(
                    f"allocator {self.name!r} pursues confident best arms or top-m sets; bandit {b} "
                    f"has objective {problem.objective.value!r}"
                )
            low, high = problem.reward_range
            if low < 0.0 or high > 1.0:
                raise ConfigError(
                    f"allocator {self.name!r} uses the greedy-confidence-pursuit paper's Beta-Bernoulli model and needs rewards "
                    f"in [0, 1]; bandit {b} (source {problem.source!r}) gives rewards in [{low}, {high}]"
                )
        self.n_bandits = len(problems)
        self.groups = group_bandits(problems)
        self.tracker = ConfidenceTracker(problems, replicas)
        self.warmup = WarmUp(self.params.warmup_per_arm, replicas, len(problems))
        self._coins = KeyedRandom(*rng.words, "mixing", replicas=rng.replicas)

    def select(self, stats: list[ArmStats]) -> np.ndarray:
        step = total_trials(stats)
        warmup = self.warmup.bandits(stats)
        if (warmup >= 0).all():
            return warmup
        coins = self._coins.uniform(step, 3)
        random_bandit = np.minimum((coins[:, 1] * self.n_bandits).astype(np.int64), self.n_bandits - 1)
        pursued = self.tracker.refresh(stats) < self.params.confidence_target
        choice = self.choose(stats, step, pursued, coins[:, 2])
        choice = np.where(pursued.any(axis=1), choice, random_bandit)
        if self.params.bandit_epsilon > 0:
            choice = np.where(coins[:, 0] < self.params.bandit_epsilon, random_bandit, choice)
        return np.where(warmup >= 0, warmup, choice)

    @abstractmethod
    def choose(self, stats: list[ArmStats], step: np.ndarray, pursued: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Bandit ``(R,)`` among the ``pursued`` ``(R, B)`` ones (rows with none are ignored);
        ``step`` is the replica's trial count and ``u`` a keyed uniform per replica."""


class GCPBayes(PursuitAllocator):
    """GCP-Bayes bandit selection (Bachman & Precup, Alg. 3 "SelectBandit"; section 5.5).

    Each step draws one posterior sample ``r ~ Beta(1 + S, 1 + F)`` of every arm of every
    bandit and pursues the bandit with the smallest sampled completion cost (eq. 12, midpoint
    gaps of the sample, floored at 1e-5) among those whose confidence (eq. 3) is below
    ``confidence_target``: posterior sampling of the greedy "cheapest bandit first" policy.
    Pair it with the ``bayes-topm`` arm rule for the paper's GCP-Bayes.

    Rewards in [0, 1].  Deviation from the authors' code (defaults follow the paper, Part
    C #24): the confidence filter uses the bound refreshed every trial (code: every 50) and
    ``confidence_target`` = the completion level; ``bandit_epsilon = 0.5`` and
    ``confidence_target = 0.985`` reproduce the code.
    """

    name = "gcp-bayes"

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        self._samplers = [
            KeyedRandom(*rng.words, "posterior", g, replicas=rng.replicas) for g in range(len(self.groups))
        ]

    def sampled_costs(self, stats: list[ArmStats], step: np.ndarray) -> np.ndarray:
        """Eq. (12) of one posterior sample per bandit ``(R, B)``."""
        cost = np.empty((self.replicas, self.n_bandits))
        for group, sampler in zip(self.groups, self._samplers, strict=True):
            a, b = posterior_parameters(stats, group)
            sample = sampler.beta(step, a.reshape(self.replicas, -1), b.reshape(self.replicas, -1))
            cost[:, group.bandits] = completion_cost(sample.reshape(a.shape), group.problem.top_m)
        return cost

    def choose(self, stats, step, pursued, u):
        return np.argmin(np.where(pursued, self.sampled_costs(stats, step), np.inf), axis=1)


class TargetedParams(PursuitParams):
    max_resamples: int = Field(
        32, ge=1, description="posterior samples drawn per step looking for a target-best bandit (code: 32)"
    )


class TargetedGCPBayes(PursuitAllocator):
    """Targeted GCP-Bayes bandit selection (Bachman & Precup, Alg. 4; section 5.6).

    Only bandits whose *target arm* (``target_arm`` of each ``[[bandits]]`` entry, the
    paper's arm 1) is best are worth completing.  Each step draws posterior samples of all
    bandits, up to ``max_resamples`` times, until some pursued bandit (confidence below
    target) has its target arm sampled best (``r_target >= max_j r_j``); among those it picks
    the smallest sampled cost (eq. 12).  If no sample within the cap has one, it falls back
    to Alg. 3 on the last sample (cheapest pursued bandit), as the paper says.  Bandits
    without a target arm are never target-best.  Pair it with ``bayes-topm`` (best-arm).

    Deviation: the paper's loop stops once *any* bandit has its target sampled best, then
    takes the argmin over not-yet-confident bandits, which is all-infinite when the only
    target-best bandits are already confident; we stop once a *pursued* bandit qualifies
    (the authors' code reaches the same choice by adding 1e8 to the other bandits' costs).
    Draws are keyed by (seed, replica, trials so far, attempt); rewards in [0, 1].
    """

    name = "gcp-targeted"
    Params = TargetedParams

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        targets = target_arms(problems)
        if all(t is None for t in targets):
            raise ConfigError(
                f"allocator {self.name!r} pursues target arms, but no bandit has one; set "
                f"target_arm in the [[bandits]] entries (0-based, e.g. target_arm = 0)"
            )
        for b, (problem, target) in enumerate(zip(problems, targets, strict=True)):
            if target is not None and problem.top_m != 1:
                raise ConfigError(
                    f"allocator {self.name!r}: bandit {b} has a target arm but top_m = {problem.top_m}; "
                    f"targets need best-arm bandits"
                )
        self._targets = [np.array([-1 if targets[b] is None else targets[b] for b in g.bandits]) for g in self.groups]

    def _samples(self, posterior: list, rows: np.ndarray, step: np.ndarray, first: int, count: int):
        """Costs and target-best flags ``(len(rows), count, B)`` of attempts ``first ..
        first + count - 1`` (one keyed draw for the whole batch of attempts)."""
        ids = self.rng.replicas[rows]
        shape = (rows.size, count, self.n_bandits)
        cost, best = np.empty(shape), np.zeros(shape, dtype=bool)
        for g, (group, targets, (a, b)) in enumerate(zip(self.groups, self._targets, posterior, strict=True)):
            tiled = (rows.size, count, *a.shape[1:])
            a_rows = np.broadcast_to(a[rows][:, None], tiled).reshape(rows.size, -1)
            b_rows = np.broadcast_to(b[rows][:, None], tiled).reshape(rows.size, -1)
            sampler = KeyedRandom(*self.rng.words, "targeted", g, first, replicas=ids)
            sample = sampler.beta(step[rows], a_rows, b_rows).reshape(tiled)
            cost[:, :, group.bandits] = completion_cost(sample, 1)
            on_target = np.take_along_axis(sample, np.maximum(targets, 0)[None, None, :, None], axis=3)[..., 0]
            best[:, :, group.bandits] = (targets >= 0) & (on_target >= sample.max(axis=3))
        return cost, best

    def choose(self, stats, step, pursued, u):
        # attempts run in batches of 1, 2, 4, ... so that a replica needing many resamples
        # costs a few vectorized draws, and one that succeeds at once costs a single draw
        posterior = [posterior_parameters(stats, group) for group in self.groups]
        cost = np.empty((self.replicas, self.n_bandits))
        qualifies = np.zeros((self.replicas, self.n_bandits), dtype=bool)
        rows = np.flatnonzero(pursued.any(axis=1))
        first, count = 0, 1
        while rows.size and first < self.params.max_resamples:
            count = min(count, self.params.max_resamples - first)
            costs, best = self._samples(posterior, rows, step, first, count)
            hits = best & pursued[rows][:, None, :]
            found = hits.any(axis=2)
            # the first attempt with a target-best pursued bandit, else the last (fallback)
            pick = np.where(found.any(axis=1), np.argmax(found, axis=1), count - 1)
            cost[rows] = costs[np.arange(rows.size), pick]
            qualifies[rows] = hits[np.arange(rows.size), pick]
            rows = rows[~found.any(axis=1)]
            first, count = first + count, 2 * count
        targeted = qualifies.any(axis=1, keepdims=True)
        eligible = np.where(targeted, qualifies, pursued)
        return np.argmin(np.where(eligible, cost, np.inf), axis=1)


_ARM_RULE_DOC = (
    "policy: the bandit's policy picks the arm; agapev-joint: A-GapE-V with a from all bandits "
    "(the authors' code for this baseline)"
)


class MAPUCBParams(PursuitParams):
    arm_rule: ArmRule = Field("policy", description=_ARM_RULE_DOC)


class MAPUCB(AGapEVJoint, PursuitAllocator):
    """MAP-UCB bandit selection (introduced by Bachman & Precup as a baseline; section 5.7).

    Each step picks a bandit whose confidence (eq. 3) is below target at random, with
    probability proportional to ``1 / c``, where ``c`` is eq. (12) at the MAP (posterior
    mean) returns with GapE-style top-m gaps, floored at 1 (the authors' code; for
    rewards in [0, 1] each arm's term is at least 16 / 3, so the floor never binds).
    The arm inside the bandit is A-GapE-V: the bandit's ``agapev-topm`` policy, or with
    ``arm_rule = "agapev-joint"`` the index with ``a`` estimated over all bandits, as in the
    authors' code (:mod:`armlab.plugins.gcp.joint_ucb`).  Rewards in [0, 1].  The code's
    mixing chose a round-robin bandit; ``bandit_epsilon`` chooses a uniformly random one
    (the same frequency per bandit).
    """

    name = "map-ucb"
    Params = MAPUCBParams

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        self.prepare_arms(problems, replicas)

    def plug_in_costs(self, stats: list[ArmStats]) -> np.ndarray:
        """Eq. (12) at the MAP returns, floored at 1, ``(R, B)``."""
        cost = np.empty((self.replicas, self.n_bandits))
        for group in self.groups:
            a, b = posterior_parameters(stats, group)
            cost[:, group.bandits] = completion_cost(a / (a + b), group.problem.top_m, gaps="gape")
        return np.maximum(cost, 1.0)

    def choose(self, stats, step, pursued, u):
        weights = np.where(pursued, 1.0 / self.plug_in_costs(stats), 0.0)
        cumulative = np.cumsum(weights, axis=1)
        return np.argmax(cumulative > u[:, None] * cumulative[:, -1:], axis=1)


class UniformBanditParams(PluginParams):
    order: Literal["round-robin", "random"] = Field(
        "round-robin",
        description="round-robin: cycle through all bandits (the authors' code); "
        "random: a uniformly random bandit each trial",
    )
    arm_rule: ArmRule = Field("policy", description=_ARM_RULE_DOC)
    warmup_per_arm: int = Field(
        20, ge=0, description="agapev-joint arms: round-robin pulls per arm before the index (code: 20)"
    )


class UniformBandit(AGapEVJoint, Allocator):
    """Uni-UCB's bandit choice (Bachman & Precup, section 6): every bandit equally often.

    ``round-robin`` cycles deterministically through all bandits, completed ones included,
    as the authors' code does ("uniformly selected bandits" in the paper);
    ``random`` draws the bandit uniformly, keyed by (seed, replica, trials so far).  The
    paper's Uni-UCB picks the arm by A-GapE-V: pair it with ``agapev-topm``, or set
    ``arm_rule = "agapev-joint"`` for the code's form (``a`` from all bandits, after
    ``warmup_per_arm`` round-robin pulls per arm).  Any objective and reward range with
    ``arm_rule = "policy"``; pending pulls count as trials (the cycle position is the
    replica's trial count).
    """

    name = "uniform-bandit"
    Params = UniformBanditParams

    def reset(self, problems: list[Problem], replicas: int, rng: KeyedRandom) -> None:
        super().reset(problems, replicas, rng)
        self._draws = KeyedRandom(*rng.words, "uniform-bandit", replicas=rng.replicas)
        self.prepare_arms(problems, replicas)

    def select(self, stats: list[ArmStats]) -> np.ndarray:
        step = total_trials(stats)
        n = len(self.problems)
        if self.params.order == "round-robin":
            return step % n
        return np.minimum((self._draws.uniform(step, 1)[:, 0] * n).astype(np.int64), n - 1)
