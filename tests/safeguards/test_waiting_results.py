"""Without a stopping rule the live safeguards let results wait for the reader of the anytime
sequences; what /status shows is bit for bit what folding each result at once shows."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from armlab.orchestrator.live.safeguards import MAX_WAITING, LiveSafeguards
from armlab.problem import Problem
from armlab.safeguards import StoppingConfig
from armlab.stats import ArmStats


def test_results_that_waited_show_the_intervals_of_results_folded_at_once():
    problem = Problem(objective="best-arm", budget=10_000, n_arms=3, reward_range=(0.0, 10.0))
    waiting = LiveSafeguards([problem])
    at_once = LiveSafeguards([problem], stopping=StoppingConfig(rule="anytime", delta=waiting.delta))
    stats = ArmStats(1, 3)
    rng = np.random.default_rng(4)
    looks = set(rng.integers(0, 3 * MAX_WAITING, 12).tolist())
    for step in range(3 * MAX_WAITING + 17):  # past the cap three times, and a remainder
        arm = int(rng.integers(0, 3))
        event = SimpleNamespace(bandit=0, arm=arm, reward=float(rng.uniform(0.0, 10.0)), metrics=None)
        for safeguards in (waiting, at_once):
            safeguards.dispatched(SimpleNamespace(bandit=0, arm=arm, unit=None, trial=step))
            safeguards.observed(event)
        stats.record(np.array([0]), np.array([arm]), np.array([event.reward]))
        if step in looks:
            assert waiting.bandit_status(0, stats) == at_once.bandit_status(0, stats)
    assert any(waiting.waiting[0])  # some results still wait...
    assert waiting.intervals(0) == at_once.intervals(0)  # ...and are shown folded
    assert not any(waiting.waiting[0])
    for name in ("low", "high", "counts", "sum_x", "sum_sq", "sum_bet", "sum_bet_x", "sum_penalty"):
        assert getattr(waiting.sequences[0], name).tobytes() == getattr(at_once.sequences[0], name).tobytes(), name
