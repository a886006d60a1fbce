"""Sticky units: the four outcomes of an ask that names a unit."""

from __future__ import annotations

from armlab.safeguards import Binding, StickyUnits, UnitAsk


def test_the_rule():
    units = StickyUnits()
    open_trials, retired = {7}, set()

    def decide(unit):
        return units.decide(unit, open_trials.__contains__, lambda bandit, arm: (bandit, arm) in retired)

    assert decide("alice") == (UnitAsk.NEW, None)
    units.bind("alice", trial=7, arm=2, bandit=0)
    assert decide("alice") == (UnitAsk.OPEN, Binding(7, 2, 0))  # the same trial again
    open_trials.clear()  # trial 7 reported
    assert decide("alice") == (UnitAsk.REPEAT, Binding(7, 2, 0))  # same arm, no new trial
    retired.add((0, 2))
    assert decide("alice") == (UnitAsk.REBIND, Binding(7, 2, 0))
    units.bind("alice", trial=9, arm=1, bandit=0)  # the caller dispatched a fresh trial
    assert units.get("alice") == Binding(9, 1, 0) and len(units) == 1
    assert decide("bob") == (UnitAsk.NEW, None)


def test_an_open_trial_wins_over_a_retired_arm():
    # a unit whose trial is still running keeps it: retiring an arm does not cancel trials
    units = StickyUnits()
    units.bind("u", trial=1, arm=0, bandit=1)
    assert units.decide("u", lambda t: True, lambda b, a: True)[0] is UnitAsk.OPEN


def test_replaying_dispatches_in_order_rebuilds_the_bindings():
    # bindings are rebuilt from journaled dispatches that name a unit: the last one wins
    replayed = StickyUnits()
    for unit, trial, arm, bandit in [("a", 1, 0, 0), ("b", 2, 1, 0), ("a", 3, 1, 0)]:  # a rebound by 3
        replayed.bind(unit, trial, arm, bandit)
    assert replayed.get("a") == Binding(3, 1, 0) and replayed.get("b") == Binding(2, 1, 0)
