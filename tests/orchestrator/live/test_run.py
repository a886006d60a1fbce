"""A live replica: trials awaited through an async source with random latency."""

from __future__ import annotations

import random
import types

import anyio
import numpy as np
import pytest
from structlog.testing import capture_logs

from armlab import ConfigError, LiveSource, TrialFailed, events, hookimpl, run_experiment
from armlab.config import validate_config
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.run import LiveRun
from armlab.plugins.interfaces import PluginParams
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.registry import Registry
from armlab.problem import Objective, Problem


class LatentParams(PluginParams):
    means: list[float] = [0.2, 0.8, 0.5]
    fail_every: int = 0  # every n-th trial fails (0: never)
    hang_every: int = 0  # every n-th trial never answers (0: never)


class LatentSource(LiveSource):
    """Bernoulli arms answered after a random latency; tracks the peak number in flight."""

    name = "test-latent"
    Params = LatentParams

    def __init__(self, params=None):
        super().__init__(params)
        self.random = random.Random(0)
        self.now_in_flight = 0
        self.peak_in_flight = 0
        self.entered = self.exited = False

    @property
    def n_arms(self):
        return len(self.params.means)

    async def __aenter__(self):
        self.entered = True
        return self

    async def __aexit__(self, *exc):
        self.exited = True

    async def pull(self, trial):
        self.now_in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.now_in_flight)
        try:
            number = trial.id + 1
            if self.params.hang_every and number % self.params.hang_every == 0:
                await anyio.sleep_forever()
            await anyio.sleep(self.random.uniform(0, 0.004))
            if self.params.fail_every and number % self.params.fail_every == 0:
                raise TrialFailed("instrument offline")
            return float(self.random.random() < self.params.means[trial.arm])
        finally:
            self.now_in_flight -= 1


def live(policy, source, budget=60, **kw):
    problem = Problem(objective=Objective.BEST_ARM, budget=budget, n_arms=source.n_arms)
    timeout = kw.pop("timeout", None)
    experiment = LiveExperiment(lambda: policy, [problem], 1, **kw)
    return LiveRun(experiment=experiment, sources=[source], timeout=timeout)


async def test_all_trials_complete_within_the_in_flight_limit():
    source = LatentSource()
    run = await live(UCB1(), source, in_flight=4).run()
    assert source.entered and source.exited
    assert len(run.outcomes) == 60 and all(o.status == "completed" for o in run.outcomes)
    assert 1 < source.peak_in_flight <= 4
    assert run.stats.counts.sum() == 60 and run.stats.pending.sum() == 0
    assert sorted(o.trial.id for o in run.outcomes) == list(range(60))


async def test_failures_and_timeouts_are_outcomes_not_crashes():
    source = LatentSource({"fail_every": 5, "hang_every": 7})
    run = live(Uniform(), source, budget=35, in_flight=3, timeout=0.05)
    seen = []
    run.experiment.add_listener(seen.append)
    await run.run()
    statuses = [o.status for o in run.outcomes]
    assert statuses.count("timed_out") == 5 and statuses.count("failed") == 6
    assert run.stats.counts.sum() == 35 - 11 and run.stats.pending.sum() == 0
    failed = [e for e in seen if isinstance(e, events.TrialFailed)]
    assert len(failed) == 11 and sum("timed out" in e.reason for e in failed) == 5
    assert run.summary()["failed"] == 11


async def test_choices_see_every_finished_trial():
    """With one trial in flight the live run equals the sequential algorithm."""
    source = LatentSource()
    seen = []

    class Spy(UCB1):
        def select(self, stats):
            seen.append((int(stats.dispatched[0]), int(stats.observed[0])))
            return super().select(stats)

    await live(Spy(), source, budget=20, in_flight=1).run()
    assert all(d == o for d, o in seen)


def test_live_experiment_through_the_config(tmp_path):
    pm = get_plugin_manager(load_entrypoints=False)
    module = types.ModuleType("latent")
    module.armlab_register_sources = hookimpl(lambda: [LatentSource], specname="armlab_register_sources")
    pm.register(module, name="latent")
    config = validate_config({
        "name": "live", "seed": 2, "replicas": 1,
        "problem": {"objective": "best-arm", "budget": 40},
        "source": {"plugin": "test-latent"},
        "feedback": {"in_flight": 4, "timeout": 1.0},
        "policies": [{"plugin": "ucb1"}],
    })
    with capture_logs() as events:
        summary = run_experiment(config, registry=Registry(pm), out_dir=tmp_path)
    result = summary["policies"]["ucb1"]
    assert result["trials"] == 40 and result["failed"] == 0
    assert result["recommendation"] in (0, 1, 2) and sum(result["counts"]) == 40
    names = [e["event"] for e in events]
    assert names.count("trial_observed") == 40 and "experiment_finished" in names
    assert (tmp_path / "summary.json").exists()
    two = config.model_dump()
    two["policies"].append({"plugin": "uniform"})
    with pytest.raises(ConfigError, match="exactly one policy"):
        run_experiment(validate_config(two), registry=Registry(pm))
    assert np.isfinite(result["means"]).all()
