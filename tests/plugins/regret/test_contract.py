"""Regret bookkeeping of every regret policy, their registration and common random numbers (the policy
contract itself: tests/plugins/test_conformance.py)."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.interfaces import Policy
from armlab.plugins.policies.thompson import Thompson
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.regret import DMED, EUCBV, KLUCB, MOSS, OCUCB, UCBV, BayesUCB, MedianElimination, UCBImproved
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.problem import Objective
from armlab.testing import simulate_policy

VARIANTS = [
    (EUCBV, {}, "gaussian"),
    (EUCBV, {"elim_count": "round", "log_uses": "M", "tie_break": "lowest"}, "gaussian"),
    (UCBV, {}, "gaussian"),
    (MOSS, {}, "gaussian"),
    (MOSS, {"horizon": "t"}, "gaussian"),
    (KLUCB, {}, "bernoulli"),
    (KLUCB, {"c": 3.0}, "bernoulli"),
    (KLUCB, {"divergence": "gaussian"}, "gaussian"),
    (DMED, {}, "bernoulli"),
    (BayesUCB, {}, "bernoulli"),
    (BayesUCB, {"posterior": "gaussian", "c": 1.0}, "gaussian"),
    (OCUCB, {}, "gaussian"),
    (UCBImproved, {}, "gaussian"),
    (MedianElimination, {"square": False}, "gaussian"),
    (MedianElimination, {"square": False, "estimates": "cumulative"}, "bernoulli"),
    (Thompson, {"prior": "gaussian"}, "gaussian"),
]
IDS = [f"{cls.name}-{'-'.join(f'{k}={v}' for k, v in params.items()) or 'default'}" for cls, params, _ in VARIANTS]


def test_every_regret_policy_is_registered_with_its_name(registry):
    names = set(registry.names("policy"))
    assert {"eucbv", "ucb1", "ucbv", "moss", "klucb", "dmed", "thompson", "bayes-ucb", "ocucb", "ucb-improved",
            "median-elimination"} <= names
    for cls, _, _ in VARIANTS:
        assert registry.get("policy", cls.name) is cls
        assert cls.objectives >= {Objective.REGRET}
        doc = cls.__doc__ or ""
        assert "pending" in doc.lower() and "[0, 1]" in doc  # pending pulls and reward range documented
        assert "horizon" in doc.lower() or "anytime" in doc.lower()


def source_for(kind: str):
    means = [0.5, 0.45, 0.45, 0.3, 0.2, 0.6]
    if kind == "bernoulli":
        return Bernoulli({"means": means})
    return Gaussian({"means": means, "variances": [0.7, 0.1, 0.4, 0.2, 0.5, 0.3]})


@pytest.mark.parametrize(("cls", "params", "source"), VARIANTS, ids=IDS)
def test_regret_is_pseudo_regret_non_decreasing_and_bounded(cls, params, source):
    budget = 400
    sim = simulate_policy(lambda: cls(params), source_for(source), budget=budget, objective=Objective.REGRET, replicas=5,
                          delay=2, checkpoints=list(range(50, budget + 1, 50)))
    gaps = sim.problems[0].truth.gaps()
    counts = sim.stats[0].counts
    assert sim.regret == pytest.approx((gaps * counts).sum(axis=1), abs=1e-9)  # sum_i Delta_i N_i(T)
    assert (np.diff(sim.cp_regret, axis=1) >= 0).all()
    assert (sim.cp_regret <= np.array(sim.checkpoints) * gaps.max() + 1e-9).all()
    assert (sim.dispatched == budget).all()


class Recording(Policy):
    """Wraps a policy and records every (replica, arm, reward) it is shown."""

    name = "recording"

    def __init__(self, inner: Policy) -> None:
        super().__init__()
        self.inner = inner
        self.seen: dict[tuple[int, int], list[float]] = {}

    def reset(self, problem, replicas, rng):
        super().reset(problem, replicas, rng)
        self.inner.reset(problem, replicas, rng)

    def select(self, stats):
        return self.inner.select(stats)

    def update(self, stats, rows, arms, rewards):
        self.inner.update(stats, rows, arms, rewards)
        for r, a, x in zip(rows.tolist(), arms.tolist(), rewards.tolist(), strict=True):
            self.seen.setdefault((r, a), []).append(x)


def test_policies_see_common_random_numbers():
    """The k-th pull of an arm pays the same reward whichever policy pulls it (common random numbers)."""
    streams = []
    for factory in (EUCBV, lambda: Thompson({"prior": "gaussian"}), UCBImproved,
                    lambda: UCB1({"tie_break": "random"})):
        recording = Recording(factory())
        simulate_policy(lambda rec=recording: rec, source_for("gaussian"), budget=400, objective=Objective.REGRET,
                        replicas=3, seed=7)
        streams.append(recording.seen)
    shared = 0
    for other in streams[1:]:
        for key in streams[0].keys() & other.keys():
            n = min(len(streams[0][key]), len(other[key]))
            assert streams[0][key][:n] == other[key][:n]
            shared += n
    assert shared > 500
