"""``trials`` means one thing in every event: trials dispatched per replica (Monte Carlo)
or in the one replica (live), never a total over replicas."""

from __future__ import annotations

import pytest

from armlab import events, run_experiment
from armlab.config import validate_config

BASE = {
    "name": "trials", "seed": 2, "replicas": 3, "checkpoints": [10, 30],
    "problem": {"objective": "best-arm", "budget": 30, "delta": 0.1},
    "source": {"plugin": "bernoulli", "means": [0.9, 0.1]},
}


def _heard(config: dict, registry) -> list[events.ExperimentEvent]:
    heard: list[events.ExperimentEvent] = []
    run_experiment(validate_config(config), registry=registry, listeners=[heard.append])
    return heard


def test_monte_carlo_events_count_trials_per_replica(registry):
    heard = _heard({**BASE, "policies": [{"plugin": "uniform"}]}, registry)
    assert [(type(e), e.trials) for e in heard] == [
        (events.CheckpointReached, 10), (events.CheckpointReached, 30), (events.PolicyFinished, 30),
    ]


def test_a_stopping_rule_reports_the_mean_trials_per_replica(registry):
    config = {**BASE, "replicas": 4, "problem": {**BASE["problem"], "budget": 400},
              "checkpoints": [400], "policies": [{"plugin": "lucb1"}]}
    heard: list[events.ExperimentEvent] = []
    summary = run_experiment(validate_config(config), registry=registry, listeners=[heard.append])
    finished = [e for e in heard if isinstance(e, events.PolicyFinished)]
    assert len(finished) == 1
    assert finished[0].trials == pytest.approx(summary["policies"]["lucb1"]["stopping_time_mean"])
    assert finished[0].trials < 400


def test_live_events_count_the_trials_of_the_one_replica(registry, tmp_path, monkeypatch):
    (tmp_path / "event_trials_b31.py").write_text("def reward(trial):\n    return float(trial.arm == 0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    source = {"plugin": "callback", "function": "event_trials_b31:reward", "arms": 2,
              "reward_min": 0, "reward_max": 1}
    heard = _heard({**BASE, "replicas": 1, "source": source, "policies": [{"plugin": "uniform"}]}, registry)
    assert [e.trials for e in heard if isinstance(e, events.CheckpointReached)] == [10, 30]
    assert [e.trials for e in heard if isinstance(e, events.ExperimentStopped)] == [30]
    dispatched = 0
    for event in heard:  # every event with a count: the trials dispatched when it happened
        dispatched += isinstance(event, events.TrialDispatched)
        if isinstance(event, (events.ArmEliminated, events.RecommendationChanged, events.ExperimentStopped)):
            assert event.trials == dispatched
