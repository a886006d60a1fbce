"""The ask/tell core: trials, in-flight bound, budget, report semantics, and exact replay."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armlab import events
from armlab.adapters.base import RewardRejected
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.types import (
    ExperimentState,
    JournalMismatch,
    NoTrialAvailable,
    ReportConflict,
    RetireRefused,
    TrialStatus,
    UnknownTrial,
)
from armlab.plugins.fixed_confidence.lucb1 import LUCB1
from armlab.plugins.gcp.allocators import UniformBandit
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.policies.thompson import Thompson
from armlab.plugins.policies.ucb1 import UCB1
from armlab.problem import Objective, Problem


def test_ucb1_first_trials_by_hand(live):
    """3 arms, 2 in flight: arms 0 and 1 go out, the third ask waits; then arm 2, then the index."""
    exp = live.experiment(UCB1(), budget=10, in_flight=2)
    first, second = exp.ask(), exp.ask()
    assert (first.id, first.arm, first.pull) == (0, 0, 0) and (second.id, second.arm) == (1, 1)
    assert exp.stats.pending[0].tolist() == [1, 1, 0]  # pending pulls are visible to the policy
    with pytest.raises(NoTrialAvailable) as full:
        exp.ask()
    assert full.value.state is ExperimentState.IN_FLIGHT_FULL and exp.state is ExperimentState.IN_FLIGHT_FULL
    assert exp.tell(0, 1.0).status == "accepted"
    assert exp.ask().arm == 2  # fewest pulls (arm 1 is still pending)
    exp.tell(1, 0.0)
    exp.tell(2, 0.5)
    # n = 3 observed, one each: index = mean + sqrt(2 ln 3) -> arm 0 (mean 1.0)
    fourth = exp.ask()
    assert (fourth.id, fourth.arm, fourth.pull) == (3, 0, 1)
    assert exp.recommendation() == 0
    assert exp.summary()["counts"] == [1, 1, 1] and exp.summary()["means"] == [1.0, 0.0, 0.5]


def test_budget_exhaustion_is_a_clear_state(live):
    exp = live.experiment(budget=3, in_flight=3)
    trials = [exp.ask() for _ in range(3)]
    with pytest.raises(NoTrialAvailable, match="budget spent: all 3 trials are dispatched, 3 still pending") as spent:
        exp.ask()
    assert spent.value.state is ExperimentState.BUDGET_SPENT
    for t in trials:
        exp.tell(t.id, 0.5)
    assert exp.state is ExperimentState.FINISHED
    with pytest.raises(NoTrialAvailable, match="finished") as done:
        exp.ask()
    assert done.value.state is ExperimentState.FINISHED


def test_a_stopping_policy_ends_dispatch(live):
    """Sequential halving returns STOPPED after its schedule; ask then says so."""
    exp = live.experiment(SequentialHalving(), n_arms=3, budget=11, in_flight=1)
    n = 0
    while True:
        try:
            trial = exp.ask()
        except NoTrialAvailable as exc:
            assert exc.state is ExperimentState.FINISHED
            break
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
        n += 1
    assert n == 10  # S = ceil(log2 3) = 2 stages of floor(11 / 2) = 5 pulls: 1 trial unused
    assert exp.status()["confidence"]["policy_stopped"] is True


def test_report_semantics(live):
    exp = live.experiment(budget=10, in_flight=3)
    a, b, c = exp.ask(), exp.ask(), exp.ask()
    assert exp.tell(a.id, 1).status == "accepted"  # an int reward is a number
    again = exp.tell(a.id, 1.0)
    assert again.status == "duplicate" and "nothing changed" in again.message
    with pytest.raises(ReportConflict, match="already has reward 1.0; refusing the different 0.0"):
        exp.tell(a.id, 0.0)
    with pytest.raises(UnknownTrial, match="no trial with id 7"):
        exp.tell(7, 0.5)
    with pytest.raises(UnknownTrial):
        exp.tell(True, 0.5)  # a bool is not a trial id
    assert exp.abandon(b.id, "operator gave up").status == "accepted"
    assert exp.abandon(b.id).status == "duplicate"
    late = exp.tell(b.id, 0.25)
    assert late.status == "late" and "abandoned (operator gave up)" in late.message
    assert exp.tell(b.id, 0.25).status == "duplicate"
    with pytest.raises(ReportConflict, match="late reward"):
        exp.tell(b.id, 0.5)
    with pytest.raises(ReportConflict, match="cannot be marked abandoned"):
        exp.abandon(a.id)
    exp.fail(c.id, "instrument offline")
    c_record = exp.record(c.id)
    assert c_record.status is TrialStatus.FAILED and c_record.reason == "instrument offline"
    summary = exp.summary()
    assert (summary["completed"], summary["failed"], summary["abandoned"], summary["late"]) == (1, 1, 1, 1)
    # the late reward is recorded but not counted
    assert exp.stats.counts.sum() == 1 and exp.stats.pending.sum() == 0


@pytest.mark.parametrize(
    ("reward", "reason"),
    [
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        ("0.5", "must be a number, got str"),
        (None, "must be a number, got NoneType"),
        (True, "must be a number, got bool"),
        (1.5, "outside the declared range"),
        (-0.01, "outside the declared range"),
    ],
)
def test_unusable_rewards_are_rejected_without_effect(live, reward, reason):
    exp = live.experiment(budget=5)
    trial = exp.ask()
    with pytest.raises(RewardRejected, match=reason):
        exp.tell(trial.id, reward)
    assert exp.record(trial.id).status is TrialStatus.PENDING and exp.stats.counts.sum() == 0
    assert exp.tell(trial.id, 1.0).status == "accepted"  # the trial is still open for a good report


def test_idempotent_ask_by_key(live):
    exp = live.experiment(budget=5, in_flight=2)
    first = exp.ask(key="client-1/request-1")
    assert exp.ask(key="client-1/request-1") == first and len(exp.trials) == 1
    exp.tell(first.id, 1.0)
    assert exp.ask(key="client-1/request-1") == first  # still the same trial, now completed
    assert exp.ask(key="client-1/request-2").id == 1


def test_recorder_runs_before_the_change_and_can_veto_it(live):
    seen = []

    def failing_recorder(event):
        seen.append(event)
        if event.kind == "result":
            raise OSError("disk full")

    exp = live.experiment(budget=5, recorder=failing_recorder)
    trial = exp.ask()
    with pytest.raises(OSError):
        exp.tell(trial.id, 1.0)
    assert [e.kind for e in seen] == ["dispatch", "result"]
    assert exp.record(trial.id).status is TrialStatus.PENDING and exp.stats.counts.sum() == 0


def test_journal_records_and_typed_events(live, clock):
    records, seen = [], []
    exp = live.experiment(budget=2, in_flight=2, recorder=records.append, clock=clock, checkpoints=[1, 2])
    exp.add_listener(seen.append)
    t0 = exp.ask(key="k")
    clock.now += 5
    exp.tell(t0.id, 0.75)
    t1 = exp.ask()
    exp.abandon(t1.id, "no")
    assert [(e.kind, e.trial, e.arm, e.bandit, e.reward, e.key, e.at) for e in records] == [
        ("dispatch", 0, 0, 0, None, "k", 1000.0),
        ("result", 0, 0, 0, 0.75, None, 1005.0),
        ("dispatch", 1, 1, 0, None, None, 1005.0),
        ("abandoned", 1, 1, 0, None, None, 1005.0),
    ]
    assert seen == [
        events.TrialDispatched(trial=0, bandit=0, arm=0, pull=0),
        events.TrialObserved(trial=0, bandit=0, arm=0, reward=0.75),
        events.RecommendationChanged(bandit=0, trials=1, recommendation=0),
        events.CheckpointReached(trials=1, recommendation=0),  # before the next dispatch
        events.TrialDispatched(trial=1, bandit=0, arm=1, pull=0),
        events.ExperimentStopped(reason="budget", trials=2),
        events.TrialAbandoned(trial=1, bandit=0, arm=1, reason="no"),
        events.CheckpointReached(trials=2, recommendation=0),  # the last one: once nothing is pending
    ]
    assert seen[1].to_dict() == {"event": "trial_observed", "trial": 0, "bandit": 0, "arm": 0, "reward": 0.75}
    assert exp.recommendations == [0, 0]


def test_status_reports_intervals(live):
    exp = live.experiment(budget=10, in_flight=1)
    for reward in (1.0, 0.0, 1.0, 0.0):
        trial = exp.ask()
        exp.tell(trial.id, reward if trial.arm == 0 else 0.5)
    status = exp.status()
    assert status["dispatched"] == 4 and status["pending"] == 0 and status["state"] == "running"
    intervals = status["confidence"]["intervals"]
    counts = status["counts"]
    for arm, interval in enumerate(intervals):
        if counts[arm] < 2:
            assert interval is None
        else:
            mean, sd = status["means"][arm], np.sqrt(exp.stats.variances(ddof=1)[0, arm] / counts[arm])
            # clipped to the declared reward range (issue 32: [-0.48, 1.48] is no interval of a mean in [0, 1])
            low, high = exp.problem.reward_range
            assert interval == pytest.approx([max(low, mean - 1.959964 * sd), min(high, mean + 1.959964 * sd)])
    assert status["confidence"]["label"] == "fixed-sample: valid only at one pre-planned look"


# -- replay: the same events in the same order give the same state ---------------------------

ACTIONS = st.lists(
    st.tuples(st.sampled_from(["ask", "tell", "tell", "abandon", "fail", "retell", "late"]), st.integers(0, 10**6)),
    max_size=60,
)


def _drive(exp, actions, rewards):
    """Apply ``actions`` (a random but valid-or-refused workload) to ``exp``."""
    for action, pick in actions:
        pending = [t.id for t in exp.pending_trials()]
        closed = [r.trial.id for r in exp.trials if r.status is not TrialStatus.PENDING]
        try:
            if action == "ask":
                exp.ask(key=f"k{pick % 7}" if pick % 3 == 0 else None)
            elif action in ("tell", "abandon", "fail") and pending:
                trial_id = pending[pick % len(pending)]
                arm = exp.record(trial_id).trial.arm
                if action == "tell":
                    exp.tell(trial_id, rewards(arm, exp.record(trial_id).trial.pull))
                elif action == "abandon":
                    exp.abandon(trial_id)
                else:
                    exp.fail(trial_id, "broken")
            elif action in ("retell", "late") and closed:
                exp.tell(closed[pick % len(closed)], (pick % 5) / 4)
        except (NoTrialAvailable, ReportConflict):
            pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS, cut=st.integers(0, 60), policy=st.sampled_from(["ucb1", "thompson"]))
def test_replay_after_a_crash_equals_the_run_that_never_stopped(live, actions, cut, policy):
    def fresh(recorder=None):
        chosen = UCB1({"tie_break": "random"}) if policy == "ucb1" else Thompson()
        return live.experiment(chosen, budget=25, in_flight=4, recorder=recorder, checkpoints=[5, 10, 20])

    journal = []
    uninterrupted = fresh(journal.append)
    _drive(uninterrupted, actions, live.conversion)

    crashed_journal = []
    before = fresh(crashed_journal.append)
    _drive(before, actions[:cut], live.conversion)
    resumed = fresh(crashed_journal.append)
    resumed.replay(list(crashed_journal))  # records nothing: the journal holds these events
    _drive(resumed, actions[cut:], live.conversion)

    assert live.state(resumed) == live.state(uninterrupted)
    assert [(e.kind, e.trial, e.arm, e.reward, e.key) for e in crashed_journal] == [
        (e.kind, e.trial, e.arm, e.reward, e.key) for e in journal
    ]


def test_replay_detects_a_changed_policy(live):
    events = []
    exp = live.experiment(UCB1(), budget=10, in_flight=1, recorder=events.append)
    for _ in range(4):
        trial = exp.ask()
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
    other = live.experiment(Thompson(), budget=10, in_flight=1, seed=99)
    with pytest.raises(JournalMismatch, match="the policy or the experiment changed"):
        other.replay(events)


def test_a_stopping_rule_stops_the_live_run_and_the_journal_records_it(live):
    """LUCB1 on two clearly different arms: its test passes long before the budget."""
    problem = Problem(objective=Objective.BEST_ARM, budget=2000, n_arms=2, reward_range=(0.0, 1.0), delta=0.1)
    records, seen = [], []
    exp = LiveExperiment(LUCB1, [problem], 3, recorder=records.append, checkpoints=[2000])
    exp.add_listener(seen.append)
    with pytest.raises(NoTrialAvailable) as stopped:
        while True:
            trial = exp.ask()
            exp.tell(trial.id, live.conversion(trial.arm, trial.pull, rates=(0.9, 0.1)))
    assert stopped.value.state is ExperimentState.FINISHED and exp.stopped
    n = len(exp.trials)
    assert 0 < n < 2000 and records[-1].kind == "stopped" and records[-1].trial == n
    assert exp.status()["stop"] == {"trials": n, "reason": "confident", "bandit": 0, "recommendation": 0,
                                    "delta": 0.1}
    assert [type(e).__name__ for e in seen[-3:]] == ["BanditConfident", "ExperimentStopped", "CheckpointReached"]
    with pytest.raises(NoTrialAvailable):
        exp.ask()  # and stays stopped
    again = LiveExperiment(LUCB1, [problem], 3, checkpoints=[2000])
    again.replay(records)  # the replayed run stops at the same trial
    assert again.stopped and again.status()["stop"] == exp.status()["stop"] and live.state(again) == live.state(exp)


def test_a_retired_arm_is_never_dispatched_again_and_replays(live):
    records = []
    exp = live.experiment(policy=UCB1(), n_arms=3, budget=60, in_flight=1, recorder=records.append)
    for _ in range(9):
        trial = exp.ask()
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
    counts_before = exp.stats.counts[0].tolist()
    assert exp.retire(2, reason="supplier stopped") is True and exp.retire(2) is False  # once
    seen = []
    for _ in range(30):
        trial = exp.ask()
        seen.append(trial.arm)
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
    assert 2 not in seen and exp.stats.counts[0, 2] == counts_before[2]  # its results stay
    assert exp.status()["bandits"][0]["retired"] == [2]
    assert [r.kind for r in records].count("retired") == 1 and records[18].reason == "supplier stopped"
    with pytest.raises(RetireRefused, match="no arm 5"):
        exp.retire(5)
    exp.retire(1)
    with pytest.raises(RetireRefused, match="last active arm"):
        exp.retire(0)
    again = live.experiment(policy=UCB1(), n_arms=3, budget=60, in_flight=1)
    again.replay(records)
    assert live.state(again) == live.state(exp) and again.retired == {(0, 1), (0, 2)}


def test_a_policy_that_cannot_skip_arms_refuses_retirement(live):
    exp = live.experiment(policy=LUCB1({"delta": 0.1}), n_arms=3)
    with pytest.raises(RetireRefused, match="'lucb1' cannot retire arms"):
        exp.retire(1)
    assert exp.trials == [] and exp.stats.active.all()


def test_with_several_bandits_a_stopping_rule_stops_its_own_bandit(live):
    """Three bandits of different difficulty under one budget: each rule closes its bandit,
    later trials go to the others, and the experiment stops when all three are confident."""
    problems = [Problem(objective=Objective.BEST_ARM, budget=3000, n_arms=2, reward_range=(0.0, 1.0), delta=0.1)
                for _ in range(3)]
    rates = [(0.95, 0.05), (0.8, 0.3), (0.7, 0.4)]  # easy to hard
    records, seen = [], []
    exp = LiveExperiment(LUCB1, problems, 5, allocator=UniformBandit({"arm_rule": "policy"}), in_flight=3,
                     recorder=records.append)
    exp.add_listener(seen.append)
    pending, closed_at = [], {}
    while True:
        try:
            while len(pending) < 3:
                pending.append(exp.ask())
        except NoTrialAvailable:
            if exp.stopped:
                break
        trial = pending.pop(0)
        assert trial.bandit not in closed_at  # a closed bandit is never dispatched again
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull + 1000 * trial.bandit, rates=rates[trial.bandit]))
        for event in seen:
            if isinstance(event, events.BanditConfident):
                closed_at.setdefault(event.bandit, event.trials)
    for trial in pending:  # dispatched before the stop: accepted and counted
        assert exp.tell(trial.id, 1.0).status == "accepted"
    for event in seen:  # the last bandit closed inside the final ask
        if isinstance(event, events.BanditConfident):
            closed_at.setdefault(event.bandit, event.trials)
    assert sorted(closed_at) == [0, 1, 2] and closed_at[0] < max(closed_at.values())
    assert [type(e).__name__ for e in seen].count("ExperimentStopped") == 1
    assert exp.status()["stop"]["reason"] == "confident" and all(b["stopped"] for b in exp.status()["bandits"])
    again = LiveExperiment(LUCB1, problems, 5, allocator=UniformBandit({"arm_rule": "policy"}), in_flight=3)
    again.replay(records)
    assert live.state(again) == live.state(exp) and again.status()["stop"] == exp.status()["stop"]
