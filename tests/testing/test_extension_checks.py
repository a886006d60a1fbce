"""``check_source``, ``check_allocator`` and ``check_adapter``: each passes on the example
plugin of its guide (imported as a third-party module) and on built-ins, and fails with a
message naming the broken rule on a deliberately broken plugin."""

from __future__ import annotations

import importlib
import json
import re
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import anyio
import anyio.lowlevel
import numpy as np
import pytest

from armlab import LiveSource, Trial, hookimpl, run_experiment
from armlab.config import validate_config
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry
from armlab.adapters import DEFERRED, AdapterSource
from armlab.adapters.callback import Callback
from armlab.plugins.gcp.allocators import GCPBayes, UniformBandit
from armlab.plugins.gcp.arm_rules import BayesTopM
from armlab.plugins.gcp.joint_ucb import GabUCB
from armlab.plugins.sources.random_bernoulli import RandomBernoulli
from armlab.plugins.sources.simulated import Bernoulli, Gaussian
from armlab.testing import check_adapter, check_allocator, check_source

REPO = Path(__file__).resolve().parents[2]
GUIDES = {"source": "writing-a-source.md", "allocator": "writing-an-allocator.md", "adapter": "writing-an-adapter.md"}


@pytest.fixture(scope="module")
def guide(tmp_path_factory) -> SimpleNamespace:
    """Each guide's example plugin (its first Python block), imported as a module of its own."""
    folder = tmp_path_factory.mktemp("guides")
    for kind, doc in GUIDES.items():
        text = (REPO / "docs" / doc).read_text(encoding="utf-8")
        (folder / f"guide_{kind}.py").write_text(re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1))
    sys.path.insert(0, str(folder))
    try:
        yield SimpleNamespace(**{kind: importlib.import_module(f"guide_{kind}") for kind in GUIDES})
    finally:
        sys.path.remove(str(folder))
        for kind in GUIDES:
            sys.modules.pop(f"guide_{kind}", None)


def test_the_guides_are_linked_from_the_readme_and_the_policy_guide():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    policy_guide = (REPO / "docs" / "writing-a-policy.md").read_text(encoding="utf-8")
    for doc in GUIDES.values():
        assert f"docs/{doc}" in readme
        assert f"({doc})" in policy_guide


# -- sources ---------------------------------------------------------------------------------
UNIFORM = {"low": [0.0, 0.2, -1.0], "high": [1.0, 0.4, 3.0]}


def test_check_source_passes_the_guide_example_and_built_ins(guide):
    check_source(guide.source.UniformArms, UNIFORM)
    check_source(Gaussian, {"means": [0.1, 0.5, 0.3], "variances": [0.1, 1.0, 0.0]})
    check_source(Bernoulli, {"means": [0.0, 0.5, 0.9, 1.0]})
    check_source(RandomBernoulli, {"n_arms": 4})


def _broken_sources(base):
    class CallOrder(base):
        """Draws from a generator that advances with every call."""

        def reset(self, replicas, seed, bandit=0):
            super().reset(replicas, seed, bandit)
            self.draws = np.random.default_rng(seed)

        def sample(self, rows, arms, pulls):
            return self.rewards_from_uniforms(rows, arms, self.draws.random(rows.size))

    class BatchPosition(base):
        """Arm means shifted by the row in the batch, not keyed by the replica id."""

        def truth_for(self, rng):
            truth = super().truth_for(rng)
            shift = 0.01 * np.arange(rng.replicas.size)[:, None]
            return type(truth)(means=truth.means + shift, variances=truth.variances)

    class Narrow(base):
        """Declares a smaller range than its rewards have."""

        def __init__(self, params=None):
            super().__init__(params)
            self.reward_range = (0.0, 0.5)

    class SamePull(base):
        """Forgets the pull number: every pull of an arm gives the same reward."""

        def sample(self, rows, arms, pulls):
            return super().sample(rows, arms, np.zeros_like(pulls))

    return {
        "call-order": (CallOrder, "when called again with the same"),
        "batch-position": (BatchPosition, "truth.means differs when it is reset alone"),
        "narrow-range": (Narrow, "outside reward_range"),
        "same-pull": (SamePull, "the pull number is part of the key"),
    }


@pytest.mark.parametrize("case", ["call-order", "batch-position", "narrow-range", "same-pull"])
def test_check_source_names_the_broken_rule(guide, case):
    cls, message = _broken_sources(guide.source.UniformArms)[case]
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_source(cls, UNIFORM)


# -- allocators ------------------------------------------------------------------------------
def test_check_allocator_passes_the_guide_example_and_built_ins(guide):
    check_allocator(guide.allocator.FewestTrials)
    check_allocator(guide.allocator.FewestTrials, {"tie_break": "random"}, n_bandits=2, budget=60)
    check_allocator(UniformBandit, {"order": "random"})
    check_allocator(GCPBayes, {"warmup_per_arm": 2}, policy=lambda: BayesTopM({"warmup_per_arm": 2}), budget=80)
    check_allocator(GabUCB, {"warmup_per_arm": 2}, budget=80)  # a joint rule: select_arms picks the arms


def test_the_allocator_guide_config_runs_with_the_guide_example(guide):
    text = (REPO / "docs" / GUIDES["allocator"]).read_text(encoding="utf-8")
    (config,) = [block for block in re.findall(r"```toml\n(.*?)```", text, re.DOTALL) if "[[bandits]]" in block]

    class GuidePackage:
        @hookimpl
        def armlab_register_allocators(self):
            return [guide.allocator.FewestTrials]

    manager = get_plugin_manager(load_entrypoints=False)
    manager.register(GuidePackage())
    summary = run_experiment(validate_config(tomllib.loads(config)), replicas=2, registry=Registry(manager))
    (result,) = summary["policies"].values()
    assert result["allocator"] == {"plugin": "fewest-trials", "params": {"tie_break": "random"}}
    assert result["bandit_labels"] == ["checkout", "banner1", "banner2"] and "bandits_completed_mean" in result


def _broken_allocators(base):
    class PastTheEnd(base):
        def select(self, stats):
            return np.full(self.replicas, len(stats), dtype=np.int64)

    class Unkeyed(base):
        def select(self, stats):
            return np.random.default_rng().integers(0, len(stats), self.replicas)

    class ByRow(base):
        def select(self, stats):
            return (np.arange(self.replicas, dtype=np.int64) // 2) % len(stats)

    return {
        "bandit-B": (PastTheEnd, "numbered 0..2"),
        "unkeyed-random": (Unkeyed, "is not repeatable"),
        "by-row": (ByRow, "replica 3 of a batch differs from replica 3 run alone"),
    }


@pytest.mark.parametrize("case", ["bandit-B", "unkeyed-random", "by-row"])
def test_check_allocator_names_the_broken_rule(guide, case):
    cls, message = _broken_allocators(guide.allocator.FewestTrials)[case]
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_allocator(cls)


# -- adapters --------------------------------------------------------------------------------
@pytest.fixture
def recorded(tmp_path) -> dict:
    path = tmp_path / "outcomes.json"
    path.write_text(json.dumps({"A": [0.1, 0.2] * 10, "B": [0.5] * 20, "C": [0.9, 1.0] * 10}))
    return {"path": str(path), "arms": ["A", "B", "C"], "reward_min": 0, "reward_max": 1}


def test_check_adapter_passes_the_guide_example_and_built_ins(guide, recorded, tmp_path, monkeypatch):
    check_adapter(guide.adapter.Replay, recorded)
    check_adapter(guide.adapter.Replay, recorded | {"timeout": 5, "retries": 1, "backoff": 0})
    (tmp_path / "pipeline.py").write_text(
        "import anyio\n\nasync def measure(trial):\n    await anyio.sleep(0)\n    return 0.25 * trial.arm\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    check_adapter(Callback, {"function": "pipeline:measure", "arms": 4, "reward_min": 0, "reward_max": 1})


class _Fixed(LiveSource):
    """A third-party live source written against the bare contract."""

    name = "fixed"

    @property
    def n_arms(self) -> int:
        return 2

    async def pull(self, trial: Trial):
        await anyio.lowlevel.checkpoint()
        return 0.5


class _Text(_Fixed):
    async def pull(self, trial):
        return "0.5"


class _Crashes(_Fixed):
    async def pull(self, trial):
        raise ValueError("the instrument is unplugged")


class _SwallowsCancel(_Fixed):
    async def pull(self, trial):
        try:
            await anyio.lowlevel.checkpoint()
        except anyio.get_cancelled_exc_class():
            raise RuntimeError("interrupted") from None
        return 0.5


class _OneName(_Fixed):
    @property
    def arm_names(self):
        return ["only"]


class _Defers(_Fixed):
    async def pull(self, trial):
        return DEFERRED


def test_check_adapter_passes_a_bare_live_source():
    check_adapter(_Fixed)


@pytest.mark.parametrize(("cls", "message"), [
    (_Text, "returned str '0.5'"),
    (_Crashes, "raised ValueError: the instrument is unplugged"),
    (_SwallowsCancel, "raised RuntimeError: interrupted when cancelled at once"),
    (_OneName, "arm_names must be a list of 2 strings"),
    (_Defers, "defers_rewards is False"),
], ids=["string", "crash", "swallows-cancel", "arm-names", "undeclared-deferral"])
def test_check_adapter_names_the_broken_rule(cls, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_adapter(cls)


def test_check_adapter_finds_a_reward_out_of_range_that_adapter_source_would_let_through(guide, recorded):
    class Unchecked(guide.adapter.Replay):
        """Skips AdapterSource's validation: its pull returns run_once's value as is."""

        async def pull(self, trial):
            return 7.0

    with pytest.raises(AssertionError, match=re.escape("outside reward_range (0.0, 1.0)")):
        check_adapter(Unchecked, recorded)


def test_adapter_source_is_the_exported_base_of_the_built_in_adapters():
    assert issubclass(Callback, AdapterSource) and issubclass(AdapterSource, LiveSource)
