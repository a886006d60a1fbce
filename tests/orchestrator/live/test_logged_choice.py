"""A journaled ask of a deterministic policy selects once: its propensity comes from that choice.

The values themselves (exact, floored, estimated) are checked in
tests/decisionlog/test_propensities.py; here, that the choice ``select`` just made is what the
propensity is computed from, for the price of one ``(1, K)`` array.
"""

from __future__ import annotations

import pytest

from armlab.orchestrator.live import experiment as experiment_module
from armlab.plugins.index_policy import IndexPolicy
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform


@pytest.mark.parametrize("policy", [UCB1, Uniform], ids=["ucb1", "round-robin"])
@pytest.mark.parametrize("floor", [0.0, 0.3])
def test_a_journaled_ask_of_a_deterministic_policy_selects_once(live, monkeypatch, policy, floor):
    selects = []
    real = policy.select
    monkeypatch.setattr(policy, "select", lambda self, stats: selects.append(1) or real(self, stats))
    journal = []
    exp = live.experiment(policy(), n_arms=5, budget=40, in_flight=1, recorder=journal.append,
                          exploration_floor=floor)
    for _ in range(30):
        trial = exp.ask()
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
    dispatches = [e for e in journal if e.kind == "dispatch"]
    assert len(selects) == 30
    assert all(e.propensity_draws is None for e in dispatches)
    assert {e.propensity for e in dispatches} <= {1.0, 1.0 - floor + floor / 5, floor / 5}


@pytest.mark.parametrize("tie_break", ["lowest", "random"])
@pytest.mark.parametrize("floor", [0.0, 0.3])
def test_the_propensity_of_a_deterministic_index_policy_needs_no_call_and_is_the_same(live, monkeypatch,
                                                                                      tie_break, floor):
    """An index policy with lowest-index ties journals propensity 1 at its choice without asking
    ``propensities``; the values are those ``propensities`` gives (random ties still ask it)."""
    def run(shortcut: bool) -> tuple[list, int]:
        calls = []
        real = IndexPolicy.propensities
        monkeypatch.setattr(IndexPolicy, "propensities", lambda self, *a: calls.append(1) or real(self, *a))
        if not shortcut:
            monkeypatch.setattr(experiment_module, "chooses_deterministically", lambda policy: False)
        journal = []
        exp = live.experiment(UCB1({"tie_break": tie_break}), n_arms=4, budget=60, in_flight=3,
                              recorder=journal.append, exploration_floor=floor)
        for _ in range(20):
            trials = [exp.ask() for _ in range(3)]
            for trial in trials:
                exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
        monkeypatch.undo()
        return [(e.arm, e.propensity, e.propensity_draws) for e in journal if e.kind == "dispatch"], len(calls)

    fast, fast_calls = run(shortcut=True)
    generic, generic_calls = run(shortcut=False)
    assert fast == generic and len(fast) == 60
    assert generic_calls == 60 and fast_calls == (0 if tie_break == "lowest" else 60)
