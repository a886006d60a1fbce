"""The greedy-confidence-pursuit paper's allocators on crafted statistics: eq. (12), eq. (3), warm-up, each bandit rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.multibandit import group_bandits
from armlab.plugins.gcp.allocators import MAPUCB, GCPBayes, TargetedGCPBayes, UniformBandit
from armlab.plugins.gcp.costs import completion_cost
from armlab.plugins.gcp.joint_ucb import GabUCB, agapev_indices
from armlab.plugins.gcp.tracking import ConfidenceTracker
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

ALLOCATORS = [GCPBayes, TargetedGCPBayes, MAPUCB, UniformBandit, GabUCB]


# -- eq. (12) and eq. (3) -------------------------------------------------------------------
def test_completion_cost_by_hand():
    # returns (0.6, 0.5, 0.3), best arm: midpoint 0.55, gaps (0.05, 0.05, 0.25);
    # sum_j (s_j + sqrt(s_j^2 + 16/3 g_j))^2 / g_j^2 with s_j = sqrt(r_j (1 - r_j))
    # = 577.636 + 594.184 + 46.271
    assert completion_cost([0.6, 0.5, 0.3], 1) == pytest.approx(1218.0918, rel=1e-6)
    # GapE-style gaps (0.1, 0.1, 0.3) (MAP-UCB, Fig. 3)
    assert completion_cost([0.6, 0.5, 0.3], 1, gaps="gape") == pytest.approx(415.4804, rel=1e-6)


def test_completion_cost_floors_gaps_and_is_vectorized():
    # a sampled tie: gaps (0, 0, 0.3) are floored at 1e-5 -> huge but finite
    assert completion_cost([0.5, 0.5, 0.2], 1) == pytest.approx(2.00021333e10, rel=1e-6)
    costs = completion_cost(np.array([[[0.6, 0.5, 0.3], [0.9, 0.1, 0.1]]]), 1)
    assert costs.shape == (1, 2) and costs[0, 0] == pytest.approx(1218.0918, rel=1e-6)


def test_confidence_tracker_eq3_by_hand(bandits):
    # counts (40, 40, 40), successes (30, 20, 10): posterior means (31, 21, 11) / 42, midpoint
    # 0.619048, z = sqrt(40) gap / sqrt(r (1 - r)) = (1.7122, 1.5059, 5.1367),
    # rho = 1 - sum(1 - Phi(z)) = 0.890541
    problem = Problem(objective=Objective.BEST_ARM, budget=500, n_arms=3, reward_range=(0.0, 1.0))
    stats = [ArmStats(2, 3), ArmStats(2, 3)]
    bandits.fill(stats[0], [40, 40, 40], [30, 20, 10])
    tracker = ConfidenceTracker([problem, problem], 2)
    rho = tracker.refresh(stats)
    assert rho[:, 0] == pytest.approx([0.8905415, 0.8905415], abs=1e-6)
    assert rho[:, 1].tolist() == [0.0, 0.0]  # no data: every arm contributes tail 1/2
    # only pairs whose statistics received results are recomputed
    bandits.fill(stats[1], [5, 5, 5], [5, 0, 0])
    stats[1].observed[0] = 0  # replica 0 of bandit 1 unchanged since the last refresh
    rho = tracker.refresh(stats)
    assert rho[0, 1] == 0.0 and rho[1, 1] > 0.0


def test_agapev_joint_index_by_hand(bandits):
    # one bandit, counts (8, 8), successes (6, 2), plus one 1 and one 0 each: T = 10,
    # means (0.7, 0.3), unbiased variances 0.23333, midpoint gaps 0.2, D+ = 0.2 + sqrt(1/20),
    # v- = 0 -> h = (16/3) D+ / D+^2 = 12.5903 per arm, H = 25.1806;
    # a = (8/9)(100 - 4)/H = 3.38886; index = -0.2 + sqrt(2 a v / 10) + 7 a / 27 = 1.076268
    def stats(counts, successes):
        st = ArmStats(1, 2)
        bandits.fill(st, counts, successes)
        return st

    one = [Problem(objective=Objective.BEST_ARM, budget=100, n_arms=2)]
    (index,) = agapev_indices([stats([8, 8], [6, 2])], group_bandits(one), 100)
    assert index[0, 0] == pytest.approx([1.076268, 1.076268], rel=1e-6)
    # a second bandit with equal means (gap 0): H = 25.1806 + 2 * 23.8514, a = (8/9) 192 / H
    two = [Problem(objective=Objective.BEST_ARM, budget=200, n_arms=2)] * 2
    (index,) = agapev_indices([stats([8, 8], [6, 2]), stats([8, 8], [4, 4])], group_bandits(two), 200)
    assert index[0] == pytest.approx(np.array([[0.737662, 0.737662], [0.967774, 0.967774]]), rel=1e-5)


# -- warm-up and bandit rules ---------------------------------------------------------------
@pytest.mark.parametrize("cls", [GCPBayes, MAPUCB, GabUCB])
def test_warm_up_is_round_robin_over_bandits_counting_pending(cls, bandits):
    allocator = cls({"warmup_per_arm": 2})
    stats = bandits.start(allocator, arm_counts=(2, 3), targets=None)
    chosen = []
    for _ in range(10):
        b = int(allocator.select(stats)[0])
        chosen.append(b)
        arm = int(np.argmin(stats[b].pulls[0]))
        stats[b].dispatch(np.array([0]), np.array([arm]))  # results stay pending
    # bandit 0 needs 4 pulls, bandit 1 needs 6; the one with fewer pulls goes first
    assert chosen == [0, 1, 0, 1, 0, 1, 0, 1, 1, 1]


def test_gab_ucb_chooses_the_joint_argmax_and_its_arm(bandits):
    allocator = GabUCB({"warmup_per_arm": 0})
    stats = bandits.start(allocator, arm_counts=(2, 2), budget=200)
    bandits.fill(stats[0], [8, 8], [6, 2])
    bandits.fill(stats[1], [8, 8], [4, 4])
    chosen = allocator.select(stats)
    assert chosen.tolist() == [1]  # index 0.9678 beats 0.7377; equal arms -> the lower
    assert allocator.select_arms(stats, chosen).tolist() == [0]


def test_gcp_bayes_pursues_the_cheapest_bandit(bandits):
    # bandit 1 has a wide gap (cheap), bandit 0 a narrow one; neither is confident at this
    # target.  The sampled costs are random, so the cheap bandit wins most, not all, draws.
    allocator = GCPBayes({"warmup_per_arm": 0, "confidence_target": 1 - 1e-12})
    stats = bandits.start(allocator, arm_counts=(3, 3), replicas=200)
    bandits.fill(stats[0], [300, 300, 300], [156, 150, 60])
    bandits.fill(stats[1], [300, 300, 300], [240, 150, 60])
    assert (allocator.tracker.refresh(stats) < 1 - 1e-12).all()
    assert (allocator.select(stats) == 1).mean() > 0.95


def test_pursuit_never_picks_a_confident_bandit_and_falls_back_to_random(bandits):
    allocator = GCPBayes({"warmup_per_arm": 0})
    stats = bandits.start(allocator, arm_counts=(3, 3, 3), replicas=200)
    bandits.fill(stats[0], [400, 400, 400], [320, 200, 80])  # confident (rho ~ 1), cheapest
    bandits.fill(stats[1], [20, 20, 20], [11, 10, 8])
    bandits.fill(stats[2], [20, 20, 20], [12, 10, 8])
    chosen = allocator.select(stats)
    assert not (chosen == 0).any() and set(chosen.tolist()) == {1, 2}
    for st in stats[1:]:  # now every bandit is confident: a uniformly random one
        bandits.fill(st, [400, 400, 400], [320, 200, 80])
    counts = np.bincount(allocator.select(stats), minlength=3)
    assert counts.min() > 40  # about 67 each of 200


def test_targeted_prefers_a_bandit_whose_target_may_be_best(bandits):
    allocator = TargetedGCPBayes({"warmup_per_arm": 0, "confidence_target": 1 - 1e-12})
    stats = bandits.start(allocator, arm_counts=(3, 3), replicas=200, targets=[0, 0])
    bandits.fill(stats[0], [300, 300, 300], [240, 150, 60])  # cheap, target arm best
    bandits.fill(stats[1], [300, 300, 300], [60, 156, 150])  # target arm clearly not best
    assert (allocator.select(stats) == 0).mean() > 0.95
    # the cheap bandit's target is hopeless -> the expensive bandit whose target is best
    bandits.fill(stats[0], [300, 300, 300], [60, 240, 150])
    bandits.fill(stats[1], [300, 300, 300], [156, 150, 60])
    assert (allocator.select(stats) == 1).mean() > 0.95
    assert (_untargeted_choices(stats) == 0).mean() > 0.95  # untargeted: the cheap one


def _untargeted_choices(stats):
    """GCP-Bayes's choices on the same statistics."""
    allocator = GCPBayes({"warmup_per_arm": 0, "confidence_target": 1 - 1e-12})
    problems = [Problem(objective=Objective.BEST_ARM, budget=5000, n_arms=st.n_arms, reward_range=(0.0, 1.0))
                for st in stats]
    allocator.reset(problems, stats[0].replicas, KeyedRandom(0, "allocator", replicas=np.arange(stats[0].replicas)))
    return allocator.select(stats)


def test_targeted_falls_back_to_alg3_when_no_target_is_ever_best(bandits):
    allocator = TargetedGCPBayes({"warmup_per_arm": 0, "confidence_target": 1 - 1e-12, "max_resamples": 5})
    stats = bandits.start(allocator, arm_counts=(3, 3), replicas=200, targets=[0, 0])
    bandits.fill(stats[0], [300, 300, 300], [30, 156, 150])  # narrow gap: expensive
    bandits.fill(stats[1], [300, 300, 300], [30, 240, 150])  # wide gap: cheap
    assert (allocator.select(stats) == 1).mean() > 0.95


def test_map_ucb_draws_bandits_in_inverse_proportion_to_plug_in_costs(bandits):
    allocator = MAPUCB({"warmup_per_arm": 0, "confidence_target": 1 - 1e-12})
    stats = bandits.start(allocator, arm_counts=(3, 3), replicas=4000)
    bandits.fill(stats[0], [98, 98, 98], [59, 49, 29])  # MAP returns (60, 50, 30) / 100
    bandits.fill(stats[1], [98, 98, 98], [89, 49, 29])  # MAP returns (90, 50, 30) / 100
    costs = allocator.plug_in_costs(stats)[0]
    assert costs[0] == pytest.approx(415.4804, rel=1e-6)  # eq. (12), GapE-style gaps
    share = (allocator.select(stats) == 0).mean()
    expected = (1 / costs[0]) / (1 / costs[0] + 1 / costs[1])
    assert share == pytest.approx(expected, abs=4 * math.sqrt(expected * (1 - expected) / 4000))


def test_uniform_bandit_round_robin_and_random(bandits):
    allocator = UniformBandit()
    stats = bandits.start(allocator, arm_counts=(2, 3, 2))
    seen = []
    for _ in range(7):
        b = int(allocator.select(stats)[0])
        seen.append(b)
        stats[b].dispatch(np.array([0]), np.array([0]))
    assert seen == [0, 1, 2, 0, 1, 2, 0]
    random = UniformBandit({"order": "random"})
    stats = bandits.start(random, arm_counts=(2, 3, 2), replicas=3000)
    counts = np.bincount(random.select(stats), minlength=3)
    assert counts.min() > 900


def test_uniform_bandit_with_joint_arms_warms_up_then_follows_the_index(bandits):
    allocator = UniformBandit({"arm_rule": "agapev-joint", "warmup_per_arm": 1})
    stats = bandits.start(allocator, arm_counts=(2, 2), budget=200)
    assert allocator.select_arms(stats, np.array([1])).tolist() == [0]  # warm-up: least pulled
    bandits.fill(stats[0], [8, 8], [6, 2])
    bandits.fill(stats[1], [30, 8], [15, 4])  # equal means: the less pulled arm explores
    (index,) = agapev_indices(stats, group_bandits(allocator.problems), 200)
    assert index[0, 1, 1] > index[0, 1, 0]
    assert allocator.select_arms(stats, np.array([1])).tolist() == [1]
    assert allocator.select_arms(stats, np.array([0])).tolist() == [int(np.argmax(index[0, 0]))]
    policy_arms = UniformBandit()
    bandits.start(policy_arms, arm_counts=(2, 2))
    assert policy_arms.select_arms(stats, np.array([1])) is None  # the bandit's policy chooses


# -- contract shared by all allocators ------------------------------------------------------
@pytest.mark.parametrize("cls", ALLOCATORS)
def test_select_is_repeatable_valid_and_replica_independent(cls, bandits):
    params = {"warmup_per_arm": 1} if cls is not UniformBandit else {"order": "random"}
    targets = [0, None, 1]
    allocator = cls(params)
    stats = bandits.start(allocator, arm_counts=(3, 4, 3), replicas=6, budget=500, targets=targets)
    rng = np.random.default_rng(0)  # test data only
    for st in stats:
        counts = rng.integers(1, 30, size=(6, st.n_arms))
        bandits.fill(st, counts[0], np.floor(counts[0] * rng.uniform(0.2, 0.8, st.n_arms)))
        st.counts[:] = counts
        st.observed[:] = st.dispatched[:] = counts.sum(axis=1)
    chosen = allocator.select(stats)
    assert chosen.shape == (6,) and chosen.dtype.kind == "i"
    assert ((chosen >= 0) & (chosen < 3)).all()
    assert np.array_equal(chosen, allocator.select(stats))
    # replica 4 alone (global id 4) chooses what it chose inside the batch
    alone = cls(params)
    one = bandits.start(alone, arm_counts=(3, 4, 3), replicas=1, budget=500, targets=targets)
    alone.reset(alone.problems, 1, KeyedRandom(0, "allocator", replicas=np.array([4])))
    for st, full in zip(one, stats, strict=True):
        for field in ("counts", "means", "m2", "observed", "dispatched"):
            getattr(st, field)[:] = getattr(full, field)[4:5]
    assert alone.select(one)[0] == chosen[4]


def test_targeted_needs_best_arm_bandits_with_targets(bandits):
    with pytest.raises(ConfigError, match="no bandit has one"):
        bandits.start(TargetedGCPBayes(), arm_counts=(3, 3))
    with pytest.raises(ConfigError, match="targets need best-arm bandits"):
        bandits.start(TargetedGCPBayes(), arm_counts=(3, 3), top_m=2, targets=[0, 0])
