"""A batch of asks selects once where the policy says its choice holds
(``Policy.choice_holds``), and dispatches exactly what the same asks one by one dispatch."""

from __future__ import annotations

import pytest

from armlab.plugins.interfaces import Policy
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.registry import default_registry

#: Every built-in policy that claims its choice can hold (the others select at every ask).
HOLDING = {info.name: info.cls for info in default_registry(False).infos("policy")
           if info.cls.choice_holds is not Policy.choice_holds}
BATCH = 5


def trials_of(live, policy: Policy, batched: bool) -> tuple[list, int]:
    """Rounds of ``BATCH`` asks then their tells (rewards from arm and pull), asked in a batch
    (``one_choice``) or one by one; the dispatched trials and how many times the choice held."""
    experiment = live.experiment(policy, n_arms=4, budget=80, in_flight=BATCH, seed=7)
    held = 0
    while experiment.state.value == "running":
        if batched:
            held += policy.choice_holds(experiment.stats)
            with experiment.one_choice():
                asked = [experiment.ask() for _ in range(BATCH)]
        else:
            asked = [experiment.ask() for _ in range(BATCH)]
        for trial in asked:
            experiment.tell(trial.id, ((trial.arm * 7 + trial.pull * 3) % 5) / 4)
    return [(r.trial, r.reward) for r in experiment.trials], held


@pytest.mark.parametrize("name", sorted(HOLDING))
def test_a_batch_dispatches_what_the_asks_one_by_one_do(live, name):
    batched, held = trials_of(live, HOLDING[name](), batched=True)
    one_by_one, _ = trials_of(live, HOLDING[name](), batched=False)
    assert batched == one_by_one and len(batched) == 80
    assert held > 10  # the choice held for most batches: the path was taken


@pytest.mark.parametrize("name", sorted(HOLDING))
def test_a_choice_that_holds_is_selected_again_after_dispatches(live, name):
    """The claim itself: while ``choice_holds``, dispatches alone never change ``select``."""
    policy = HOLDING[name]()
    experiment = live.experiment(policy, n_arms=4, budget=200, in_flight=BATCH, seed=3)
    checked = 0
    while experiment.state.value == "running":
        holds = policy.choice_holds(experiment.stats)
        first = int(policy.select(experiment.stats)[0])
        asked = [experiment.ask() for _ in range(BATCH)]
        if holds:
            checked += 1
            assert [int(policy.select(experiment.stats)[0])] + [t.arm for t in asked] == [first] * (BATCH + 1)
        for trial in asked:
            experiment.tell(trial.id, ((trial.arm * 5 + trial.pull) % 3) / 2)
    assert checked > 10


def test_random_ties_and_the_warm_up_do_not_hold(live):
    warm_up = UCB1()
    assert not warm_up.choice_holds(live.experiment(warm_up, n_arms=3).stats)  # no arm observed yet
    policy = UCB1({"tie_break": "random"})
    experiment = live.experiment(policy, n_arms=3, in_flight=1)
    for _ in range(6):
        experiment.tell(experiment.ask().id, 0.5)
    assert experiment.stats.counts.min() >= 1 and not policy.choice_holds(experiment.stats)
    assert HOLDING["ucb1"] is UCB1
