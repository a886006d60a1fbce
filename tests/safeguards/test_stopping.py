"""The anytime stopping rule: decisions by hand, and its error rate over seeded runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armlab.safeguards import should_stop
from armlab.testing.safeguards import anytime_stopping_runs

CLOSE_TWO = [0.5, 0.4]
TEN = [0.7, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2]


def test_decisions_by_hand():
    low = np.array([[0.55, 0.1, 0.3], [0.55, 0.1, 0.3], [0.0, 0.0, 0.0]])
    high = np.array([[0.9, 0.5, 0.56], [0.9, 0.5, 0.56], [1.0, 1.0, 1.0]])
    means = np.array([[0.7, 0.3, 0.45], [0.7, 0.3, 0.45], [0.0, 0.0, 0.0]])
    active = np.array([[True, True, True], [True, True, False], [True, True, True]])
    stop, best = should_stop(low, high, means, active)
    # row 0: arm 2's upper bound 0.56 > 0.55; row 1: arm 2 retired, 0.55 > 0.5; row 2: nothing seen
    assert stop.tolist() == [False, True, False] and best.tolist() == [0, 0, 0]
    lone = should_stop(low[:1], high[:1], means[:1], np.array([[False, True, False]]))
    assert lone[0].tolist() == [True] and lone[1].tolist() == [1]


def test_a_retired_leader_is_not_recommended():
    low, high = np.array([[0.8, 0.5, 0.1]]), np.array([[0.95, 0.6, 0.2]])
    stop, best = should_stop(low, high, np.array([[0.9, 0.55, 0.15]]), np.array([[False, True, True]]))
    assert stop.tolist() == [True] and best.tolist() == [1]


def error_and_stops(means, runs, budget, delta=0.05):
    stopped_at, recommended = anytime_stopping_runs(means, delta=delta, runs=runs, budget=budget, seed=32)
    stopped = stopped_at >= 0
    return (recommended[stopped] != int(np.argmax(means))).mean(), stopped.mean(), stopped_at[stopped]


@pytest.mark.parametrize(("means", "budget"), [(CLOSE_TWO, 20000), (TEN, 30000)], ids=["close-two", "ten"])
def test_wrong_stops_at_most_delta_over_500_runs(means, budget):
    error, stopped, _ = error_and_stops(means, runs=500, budget=budget)
    assert stopped >= 0.99  # the rule does stop, so the error rate says something
    assert error <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 500)
