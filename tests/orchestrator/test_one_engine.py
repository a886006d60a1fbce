"""One engine: a live run and the Monte Carlo engine at R = 1 make the same choices.

Both drive :class:`~armlab.orchestrator.core.DecisionCore`; given the same rewards (here:
the simulated sources' keyed rewards, answered at once, so zero delay) the live ask/tell
state machine must pick the same bandit and arm at every trial, end with the same
statistics, and record the same checkpoints.
"""

from __future__ import annotations

import numpy as np
import pytest

from armlab import events, run_experiment
from armlab.config import validate_config
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.types import NoTrialAvailable
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.metrics import recommendation_errors
from armlab.orchestrator.montecarlo.simulate import prepare_sources
from armlab.plan import build_plan

ONE = np.zeros(1, dtype=np.int64)


def _config(policy: dict, allocator: dict | None, bandits: int, means: list[float]) -> dict:
    entries = [
        {"label": f"test{b}", "target_arm": 1, "source": {"plugin": "bernoulli", "means": [round(means[0] - 0.05 * b, 2), *means[1:]]}}
        for b in range(bandits)
    ]
    config = {
        "name": "one-engine", "seed": 17, "replicas": 1, "checkpoints": [20, 60, 300],
        "problem": {"objective": "best-arm", "budget": 900, "delta": 0.3},
        "policies": [policy],
    }
    if bandits == 1:
        config["source"] = entries[0]["source"]
    else:
        config["bandits"] = entries
        config["allocator"] = allocator
    return config


class _Recording:
    """Wrap a simulated source: remember each (arm, reward) it hands out, in order."""

    def __init__(self, source, bandit, log):
        self.source, self.bandit, self.log = source, bandit, log

    def __getattr__(self, name):
        return getattr(self.source, name)

    def sample(self, rows, arms, pulls):
        rewards = self.source.sample(rows, arms, pulls)
        self.log.append((self.bandit, int(arms[0]), float(rewards[0])))
        return rewards


CLOSE = [0.3, 0.5, 0.45, 0.2]
CLEAR = [0.95, 0.1, 0.05, 0.1]  # a fixed-confidence rule stops long before the budget
BAYES = {"plugin": "bayes-topm", "warmup_per_arm": 2}
CASES = {
    "ucb1": ({"plugin": "ucb1"}, None, 1, CLOSE),
    "thompson": ({"plugin": "thompson"}, None, 1, CLOSE),
    "lucb1-stops": ({"plugin": "lucb1"}, None, 1, CLEAR),
    "gcp-bayes": (BAYES, {"plugin": "gcp-bayes", "warmup_per_arm": 2}, 3, CLOSE),
    "gcp-targeted": (BAYES, {"plugin": "gcp-targeted", "warmup_per_arm": 2}, 3, CLOSE),
    "uniform-bandit": ({"plugin": "ucb1"}, {"plugin": "uniform-bandit"}, 2, CLOSE),
    # each bandit's rule stops its own bandit; the run stops once all three have
    "lucb1-three-bandits-stop": ({"plugin": "lucb1"}, {"plugin": "uniform-bandit"}, 3, CLEAR),
}
STOPPING = {"lucb1-stops", "lucb1-three-bandits-stop"}


@pytest.mark.parametrize("case", CASES)
def test_live_run_makes_the_monte_carlo_choices(case, registry):
    policy, allocator, bandits, means = CASES[case]
    plan = build_plan(validate_config(_config(policy, allocator, bandits, means)), registry)
    cfg = plan.config

    simulated = []
    sources = [_Recording(s, b, simulated) for b, s in enumerate(prepare_sources(plan, ONE, cfg.seed))]
    problems = [plan.problem(s.source, s.truth, b) for b, s in enumerate(sources)]
    sim = Simulation(policy_factory=plan.policies[0].create, sources=sources, problems=problems,
                     allocator=plan.create_allocator(plan.policies[0]), feedback=cfg.feedback, seed=cfg.seed,
                     replicas=ONE, checkpoints=cfg.checkpoint_list())
    while not sim.finished:
        sim.step()

    live = LiveExperiment(plan.policies[0].create, problems, cfg.seed, allocator=plan.create_allocator(plan.policies[0]),
                      checkpoints=cfg.checkpoint_list())
    asked = []
    while live.state.value == "running":
        try:
            trial = live.ask()
        except NoTrialAvailable:  # a stopping rule stopped: the state says so
            break
        st = live.core.stats[trial.bandit]
        reward = sources[trial.bandit].source.sample(ONE, np.array([trial.arm]), np.array([trial.pull]))[0]
        asked.append((trial.bandit, trial.arm, float(reward)))
        live.tell(trial.id, float(reward))
        assert st.pending.sum() == 0

    assert asked == simulated and len(asked) > 0
    for b in range(bandits):
        assert np.array_equal(live.core.stats[b].counts, sim.stats[b].counts)
        assert np.array_equal(live.core.stats[b].means, sim.stats[b].means)
    assert int(live.core.stopped_at[0]) == int(sim.stopped_at[0])
    assert live.stopped == (case in STOPPING) and (len(asked) < 900) == live.stopped
    assert np.array_equal(live.core.open, sim.core.open)
    # the checkpoints: the same recommendations, hence the same error curve
    assert len(live.recommendations) == len(cfg.checkpoint_list())
    errors = []
    for answer in live.recommendations:
        answers = answer if bandits > 1 else [answer]
        wrong = sum(float(recommendation_errors(p, ONE, np.array([a]))[0]) for p, a in zip(problems, answers, strict=True))
        errors.append(wrong / bandits)
    assert errors == sim.cp_error[0].tolist()


def test_a_listener_hears_the_typed_events_of_simulated_and_live_runs(registry, tmp_path, monkeypatch):
    heard = []
    config = validate_config(_config({"plugin": "ucb1"}, None, 1, CLOSE) | {"replicas": 20})
    run_experiment(config, registry=registry, listeners=[heard.append])
    assert [(type(e), e.trials) for e in heard] == [
        (events.CheckpointReached, 20), (events.CheckpointReached, 60), (events.CheckpointReached, 300),
        (events.CheckpointReached, 900), (events.PolicyFinished, 900),
    ]
    assert heard[0].policy == "ucb1" and heard[0].metric == "error_rate" and 0 <= heard[0].value <= 1

    (tmp_path / "answers.py").write_text("def one(trial):\n    return float(trial.arm == 1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    live = validate_config(_config({"plugin": "ucb1"}, None, 1, CLOSE) | {
        "source": {"plugin": "callback", "function": "answers:one", "arms": 4, "reward_min": 0, "reward_max": 1}})
    heard.clear()
    run_experiment(live, registry=registry, listeners=[heard.append])
    kinds = [e.kind for e in heard]
    assert kinds.count("trial_dispatched") == kinds.count("trial_observed") == 900
    assert kinds.count("checkpoint") == 4 and kinds[-2:] == ["trial_observed", "checkpoint"]
