"""Propensities in the journal and the exploration floor (issue 33, item 1).

Each live dispatch records the probability its arm had: exact for deterministic rules and
closed forms, estimated from draws of the keyed randomness for samplers, unknown where the
policy keeps a generator of its own.  Computing it changes no choice; the floor's draws are
keyed, so a replay reproduces the run.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np
import pytest

from armlab.config import validate_config
from armlab.errors import ArmlabError, ConfigError
from armlab.orchestrator.journal.integrity import genesis, link
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import FORMAT_VERSION, Journal
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import build_plan
from armlab.plugins.interfaces import Policy
from armlab.plugins.propensity import PROPENSITY_DRAWS
from armlab.problem import Objective, Problem, Truth
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

MEANS = np.linspace(0.1, 0.6, 10)


def _config(policy: dict[str, Any], floor: float = 0.2, budget: int = 400, arms: int = 10):
    return validate_config({
        "name": "logged", "seed": 5, "exploration_floor": floor,
        "problem": {"objective": "regret", "budget": budget},
        "source": {"plugin": "external", "arms": arms, "reward_min": 0, "reward_max": 1},
        "policies": [policy],
    })


def _run(path, config, registry, trials: int, seed: int = 1) -> list[int]:
    session = LiveSession.open(journal=path, config=config, registry=registry)
    rng = np.random.default_rng(seed)
    arms = []
    for _ in range(trials):
        trial = session.experiment.ask()
        arms.append(trial.arm)
        session.experiment.tell(trial.id, float(rng.random() < MEANS[trial.arm]))
    session.close()
    return arms


def _dispatches(path) -> list[Event]:
    with Journal.open(path) as journal:
        return [e for e in journal.events() if e.kind == "dispatch"]


def test_a_uniform_random_policy_under_a_floor_logs_exactly_one_over_k(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    _run(path, _config({"plugin": "uniform", "order": "random"}), registry, 200)
    logged = _dispatches(path)
    assert len(logged) == 200
    assert all(e.propensity == pytest.approx(0.1, abs=1e-15) and e.propensity_draws is None for e in logged)


def test_a_floored_round_robin_logs_its_closed_form_and_the_floor_sends_about_epsilon_elsewhere(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    arms = _run(path, _config({"plugin": "uniform"}, budget=2000), registry, 2000)
    logged = _dispatches(path)
    high, low = 0.8 + 0.2 / 10, 0.2 / 10
    assert {round(e.propensity, 12) for e in logged} <= {round(high, 12), round(low, 12)}
    floored = sum(e.propensity < 0.5 for e in logged) / len(logged)
    assert 0.18 * 0.9 - 0.03 < floored < 0.18 + 0.03  # a uniform draw misses the round robin's arm 9 times in 10
    assert len(set(arms)) == 10


def test_ucb1_logs_exact_propensities_and_random_ties_one_over_the_ties(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    _run(path, _config({"plugin": "ucb1", "tie_break": "random"}, floor=0.0), registry, 60)
    logged = _dispatches(path)
    assert all(e.propensity_draws is None for e in logged)
    assert {e.propensity for e in logged[:10]} == {1.0}  # the warm-up: lowest arm of fewest pulls
    experiment = LiveExperiment(lambda: registry.get("policy", "ucb1")({"tie_break": "random"}),
                                [_problem(4)], 3)
    for arm in range(4):  # every arm once, reward 1: four equal indices
        experiment.tell(experiment.ask().id, 1.0)
    p, draws = experiment.core.policies[0].propensities(experiment.stats)
    assert draws is None and p.tolist() == [[0.25] * 4]


def test_thompson_logs_an_estimate_that_matches_its_choice_frequencies(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    _run(path, _config({"plugin": "thompson"}, floor=0.0), registry, 30)
    logged = _dispatches(path)
    assert all(e.propensity_draws == PROPENSITY_DRAWS and 0 < e.propensity <= 1 for e in logged)
    experiment = LiveExperiment(lambda: registry.get("policy", "thompson")(), [_problem(3)], 9)
    rng = np.random.default_rng(0)
    for _ in range(12):
        trial = experiment.ask()
        experiment.tell(trial.id, float(rng.random() < 0.5))
    policy, stats = experiment.core.policies[0], experiment.stats
    p, _ = policy.propensities(stats)
    frequency = np.bincount([_select_with_key(policy, stats, k) for k in range(4000)], minlength=3) / 4000
    assert np.abs(p[0] - frequency).max() < 0.04  # 1000 + 4000 draws: a few hundredths of error


def test_computing_propensities_changes_no_choice_of_any_policy(registry):
    """The same run with and without a recorder (only then are propensities computed)."""
    checked = 0
    for info in registry.infos("policy"):
        try:
            with_log, p = _arms(info.cls, recorder=True)
            without, _ = _arms(info.cls, recorder=False)
        except ArmlabError:  # needs inputs this small problem lacks (e.g. an oracle parameter)
            continue
        assert with_log == without, info.name
        assert all(q is None or 0 < q <= 1 for q in p), info.name
        checked += 1
    assert checked >= 10


def test_a_policy_with_a_generator_of_its_own_logs_unknown_and_a_deterministic_one_exact():
    class OwnGenerator(Policy):
        name = "own-generator"

        def reset(self, problem, replicas, rng):
            super().reset(problem, replicas, rng)
            self.mine = KeyedRandom(*rng.words, "mine", replicas=rng.replicas)

        def select(self, stats):
            return np.floor(self.mine.uniform(stats.dispatched, 1)[:, 0] * stats.n_arms).astype(np.int64)

    class Fixed(Policy):
        name = "fixed"

        def select(self, stats):
            return np.full(stats.replicas, 2, dtype=np.int64)

    stats = ArmStats(1, 4)
    for cls, expected in ((OwnGenerator, (None, None)), (Fixed, ([[0.0, 0.0, 1.0, 0.0]], None))):
        policy = cls()
        policy.reset(_problem(4), 1, KeyedRandom(1, "policy", 0, replicas=np.zeros(1, dtype=np.int64)))
        p, draws = policy.propensities(stats)
        assert (None if p is None else p.tolist(), draws) == expected


def test_the_floor_is_refused_for_a_monte_carlo_run(registry):
    config = validate_config({
        "name": "mc", "exploration_floor": 0.1, "problem": {"objective": "regret", "budget": 50},
        "source": {"plugin": "bernoulli", "means": [0.2, 0.5]}, "policies": [{"plugin": "ucb1"}],
    })
    with pytest.raises(ConfigError, match="exploration_floor: a Monte Carlo run"):
        build_plan(config, registry)
    with pytest.raises(ValueError, match="exploration_floor"):
        _config({"plugin": "ucb1"}, floor=1.5)


def test_a_floored_run_replays_bit_for_bit(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    config = _config({"plugin": "thompson"}, budget=300)
    _run(path, config, registry, 150)
    first = LiveSession.open(journal=path, registry=registry)
    state = (first.experiment.stats.counts.copy(), first.experiment.stats.means.copy())
    trial = first.experiment.ask()  # the next trial after a replay, journaled with its propensity
    first.close()
    again = LiveSession.open(journal=path, registry=registry)
    assert again.replayed == 301
    assert again.experiment.trials[-1].trial == trial
    assert np.array_equal(again.experiment.stats.counts, state[0])
    assert np.array_equal(again.experiment.stats.means, state[1])
    again.close()
    assert _dispatches(path)[-1].propensity is not None


_FORMAT_2 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, trial INTEGER NOT NULL, arm INTEGER NOT NULL,
    bandit INTEGER NOT NULL DEFAULT 0, reward REAL, reason TEXT NOT NULL DEFAULT '', key TEXT,
    at REAL NOT NULL, chain TEXT NOT NULL
);
"""


def test_a_format_2_journal_is_migrated_with_unknown_propensities_and_its_chain_kept(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_FORMAT_2)
    meta = {"format": "2", "seed": "4", "state": '"closed"'}
    db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    old = [Event("dispatch", 0, 2, key="k", at=1.0), Event("result", 0, 2, reward=0.5, at=2.0)]
    chain = genesis(meta)
    for seq, e in enumerate(old, start=1):
        chain = link(chain, seq, e)
        db.execute("INSERT INTO events VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                   (seq, e.kind, e.trial, e.arm, e.reward, e.reason, e.key, e.at, chain))
    db.commit()
    db.close()
    with Journal.open(path) as journal:
        assert journal.meta["format"] == FORMAT_VERSION == 3
        assert list(journal.events()) == old  # propensity, unit and metrics None: unknown
        journal.append(Event("dispatch", 1, 1, at=3.0, propensity=0.25, unit="u-1"))
        journal.append(Event("result", 1, 1, reward=1.0, at=4.0, metrics=json.dumps({"latency_ms": 212})))
    with Journal.open(path) as journal:  # migrated once; the new fields are in the chain
        events = list(journal.events())
    assert events[2].propensity == 0.25 and events[2].unit == "u-1" and events[3].metrics == '{"latency_ms": 212}'
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET propensity = 0.5 WHERE seq = 3")
    db.commit()
    db.close()
    with Journal.open(path) as journal, pytest.raises(ArmlabError, match="event 3 .* was changed"):
        list(journal.events())


def _problem(n_arms: int) -> Problem:
    truth = Truth(means=np.full((1, n_arms), 0.5), variances=np.full((1, n_arms), 0.25))
    return Problem(objective=Objective.REGRET, budget=200, n_arms=n_arms, reward_range=(0.0, 1.0), threshold=0.5,
                   top_m=1, delta=0.1, truth=truth)


def _select_with_key(policy: Policy, stats: ArmStats, key: int) -> int:
    rng = policy.rng
    policy.rng = KeyedRandom(*rng.words, "check", key, replicas=rng.replicas)
    try:
        return int(policy.select(stats)[0])
    finally:
        policy.rng = rng


def _arms(cls, recorder: bool) -> tuple[list[int], list[float | None]]:
    logged: list[Event] = []
    objective = next(o for o in (Objective.REGRET, Objective.BEST_ARM, Objective.THRESHOLD, Objective.TOP_M)
                     if o in cls.objectives)
    truth = Truth(means=np.array([[0.2, 0.7, 0.5, 0.4]]), variances=np.full((1, 4), 0.2))
    problem = Problem(objective=objective, budget=120, n_arms=4, reward_range=(0.0, 1.0), threshold=0.5,
                      top_m=1, delta=0.1, truth=truth)
    experiment = LiveExperiment(cls, [problem], 2, recorder=logged.append if recorder else None)
    rng = np.random.default_rng(0)
    arms = []
    for _ in range(120):
        try:
            trial = experiment.ask()
        except ArmlabError:
            break
        arms.append(trial.arm)
        experiment.tell(trial.id, float(rng.random() < truth.means[0, trial.arm]))
    return arms, [e.propensity for e in logged if e.kind == "dispatch"]
