"""A journaled ask of a deterministic policy selects once: its propensity comes from that choice.

The values themselves (exact, floored, estimated) are checked in
tests/decisionlog/test_propensities.py; here, that the choice ``select`` just made is what the
propensity is computed from, for the price of one ``(1, K)`` array.
"""

from __future__ import annotations

import pytest

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
