"""Events built only for listeners that want them, close watchers and the last change.

A listener may say, through ``wants_events()``, that it reads nothing now (the event stream
without readers); then the experiment builds no event and computes no answer, and still the
events it receives while it listens are exactly those an always-listening listener receives
at the same moments, recommendation changes included.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from armlab.orchestrator.live import answers
from armlab.orchestrator.live.types import NoTrialAvailable, ReportConflict, TrialStatus
from armlab.plugins.fixed_confidence.lucb1 import LUCB1
from armlab.plugins.policies.sh import SequentialHalving
from armlab.plugins.policies.ucb1 import UCB1

STEPS = st.lists(
    st.tuples(st.sampled_from(["ask", "tell", "tell", "tell", "abandon", "fail", "late", "toggle", "detach"]),
              st.integers(0, 10**6)),
    max_size=80,
)


class Switched:
    """A listener that wants events only while ``on``; it notes each with the step it came at."""

    def __init__(self) -> None:
        self.on = False
        self.step = 0
        self.seen: list[tuple[int, object]] = []

    def wants_events(self) -> bool:
        return self.on

    def __call__(self, event) -> None:
        self.seen.append((self.step, event))


def _step(exp, action: str, pick: int) -> None:
    """One action of a random workload (rewards from ``pick``: the best arm changes often)."""
    pending = [t.id for t in exp.pending_trials()]
    closed = [r.trial.id for r in exp.trials if r.status is not TrialStatus.PENDING]
    try:
        if action == "ask":
            exp.ask()
        elif action in ("tell", "abandon", "fail") and pending:
            trial = exp.record(pending[pick % len(pending)]).trial
            if action == "tell":
                exp.tell(trial.id, (pick % 5) / 4)
            elif action == "abandon":
                exp.abandon(trial.id)
            else:
                exp.fail(trial.id, "broken")
        elif action == "late" and closed:
            exp.tell(closed[pick % len(closed)], (pick % 5) / 4)
    except (NoTrialAvailable, ReportConflict):
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, policy=st.sampled_from(["ucb1", "sh", "lucb1"]))
@example(  # observed unheard, then detached: the answer then is what the next listener's events compare with
    steps=[("ask", 0)] * 3 + [("tell", 4), ("detach", 0)] + [("ask", 0), ("tell", 0), ("ask", 0), ("tell", 4)] * 6
    + [("detach", 0), ("toggle", 0), ("ask", 0), ("tell", 2)],
    policy="ucb1",
)
def test_a_listener_that_listens_at_times_gets_what_an_always_listening_one_gets_then(live, steps, policy):
    """Two identical runs: one listener always wants events, the other only while switched
    on (and both are detached and attached again at the same steps); the second gets exactly
    the first's events of the steps it listened at, recommendation changes included (the
    answer is computed lazily for UCB1 and LUCB1's default rule, eagerly for SH's own)."""
    def fresh():
        chosen = {"ucb1": UCB1, "sh": SequentialHalving, "lucb1": lambda: LUCB1({"delta": 0.1})}[policy]()
        return live.experiment(chosen, n_arms=3, budget=40, in_flight=3, checkpoints=[10, 20])

    always, sometimes = fresh(), fresh()
    every, switched = Switched(), Switched()
    every.on = True
    attached = True
    for exp, listener in ((always, every), (sometimes, switched)):
        exp.add_listener(listener)
    listened = set()
    for n, (action, pick) in enumerate(steps):
        every.step = switched.step = n
        if action == "toggle":
            switched.on = not switched.on
        elif action == "detach":
            attached = not attached
            for exp, listener in ((always, every), (sometimes, switched)):
                (exp.add_listener if attached else exp.remove_listener)(listener)
        else:
            _step(always, action, pick)
            _step(sometimes, action, pick)
        if switched.on and attached:
            listened.add(n)
    assert switched.seen == [(n, event) for n, event in every.seen if n in listened]
    assert live.state(sometimes) == live.state(always)


def test_while_no_listener_wants_events_an_observation_builds_none_and_computes_no_answer(live, monkeypatch):
    computed = []
    real = answers.answer
    monkeypatch.setattr(answers, "answer", lambda core, bandit: computed.append(bandit) or real(core, bandit))
    exp = live.experiment(budget=30, in_flight=1)
    listener = Switched()
    exp.add_listener(listener)
    for _ in range(20):
        trial = exp.ask()
        exp.tell(trial.id, live.conversion(trial.arm, trial.pull))
    assert listener.seen == [] and computed == []
    listener.on = True
    trial = exp.ask()
    exp.tell(trial.id, 1.0)
    assert [type(event).__name__ for _, event in listener.seen][:2] == ["TrialDispatched", "TrialObserved"]
    assert len(computed) == 2  # the answer of the last observation, then the new one


def test_close_watchers_hear_every_closed_trial_and_the_last_change_is_kept(live, clock):
    journal, closed = [], []
    exp = live.experiment(budget=10, in_flight=3, recorder=journal.append, clock=clock)
    exp.add_close_watcher(closed.append)
    assert exp.last_change is None
    a, b, c = exp.ask(), exp.ask(), exp.ask()
    clock.now += 7
    exp.tell(a.id, 1.0)
    exp.fail(b.id, "broken")
    exp.abandon(c.id)
    exp.tell(a.id, 1.0)  # a duplicate: nothing closes
    exp.tell(b.id, 0.5)  # late: the trial had closed already
    assert closed == [a.id, b.id, c.id]
    assert exp.last_change == 1007.0
    exp.remove_close_watcher(closed.append)
    exp.tell(exp.ask().id, 0.0)
    assert closed == [a.id, b.id, c.id]

    resumed = live.experiment(budget=10, in_flight=3, clock=clock)
    resumed.replay(journal)
    assert resumed.last_change is None  # a replay is no activity
