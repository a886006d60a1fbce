"""Plugin registration: built-ins and test plugins go through the same hooks."""

from __future__ import annotations

import types

import numpy as np
import pytest

from armlab import ScalarPolicy, hookimpl
from armlab.cli.app import App
from armlab.errors import DuplicatePluginError, PluginError, UnknownPluginError
from armlab.orchestrator.runner import run_experiment
from armlab.plugins import registry as registry_module
from armlab.plugins.fixed_budget import armlab_register_policies as fixed_budget_policies
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.manager import BUILTIN_PLUGINS, get_plugin_manager
from armlab.plugins.registry import Registry, default_registry
from armlab.plugins.thresholding import APT, CSAR, UCBE, UCBEV, AugUCB
from armlab.testing import check_policy


class GreedyParams(PluginParams):
    warmup: int = 1


class Greedy(Policy):
    """Pull the best observed arm after ``warmup`` pulls of each (test plugin)."""

    name = "test-greedy"
    Params = GreedyParams

    def select(self, stats):
        unpulled = stats.pulls < self.params.warmup
        first = np.argmax(unpulled, axis=1)
        return np.where(unpulled.any(axis=1), first, np.argmax(stats.means, axis=1))


class ScalarFirst(ScalarPolicy):
    """Always arm 0 (a one-replica test plugin)."""

    name = "test-first"

    def select(self, stats):
        return 0


def _module(**hooks) -> types.ModuleType:
    module = types.ModuleType("armlab_test_plugin")
    for name, fn in hooks.items():
        setattr(module, name, hookimpl(fn, specname=name))
    return module


def test_builtins_are_registered_through_the_hooks(registry):
    pm = registry.pm
    assert {pm.get_name(p) for p in pm.get_plugins()} >= set(BUILTIN_PLUGINS)
    assert {"uniform", "ucb1", "sh", "thompson"} <= set(registry.names("policy"))
    assert {"gaussian", "bernoulli"} <= set(registry.names("source"))
    assert "single" in registry.names("allocator")


def test_fixed_budget_and_thresholding_policies_keep_the_names_configs_use(registry):
    assert {cls.name for cls in fixed_budget_policies()} == {"sr", "vbr", "shvar", "shadavar", "gape", "gapev", "agapev"}
    for cls in (*fixed_budget_policies(), AugUCB, APT, UCBE, UCBEV, CSAR):
        assert registry.get("policy", cls.name) is cls


def test_third_party_plugin_registers_like_a_builtin():
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_register_policies=lambda: [Greedy, ScalarFirst]), name="test")
    registry = Registry(pm)
    assert registry.get("policy", "test-greedy") is Greedy
    wrapped = registry.get("policy", "test-first")
    assert issubclass(wrapped, Policy) and wrapped.name == "test-first"
    check_policy(Greedy)
    check_policy(wrapped)
    info = next(i for i in registry.infos("policy") if i.name == "test-greedy")
    assert info.describe()["params"]["warmup"]["default"] == 1
    assert info.origin == "test"


def test_duplicate_names_are_refused_naming_both_classes():
    """A clash makes only its own name unusable: the other plugins keep working."""

    class Clash(Greedy):
        name = "ucb1"

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_register_policies=lambda: [Clash]), name="clash")
    registry = Registry(pm)
    with pytest.raises(DuplicatePluginError, match=r"'ucb1'.*UCB1.*Clash"):
        registry.get("policy", "ucb1")
    assert "ucb1" not in registry.names("policy") and registry.get("policy", "sh").name == "sh"


def test_unknown_name_lists_the_available_ones(registry):
    with pytest.raises(UnknownPluginError, match=r"unknown policy plugin 'ucb'; available: .*ucb1"):
        registry.get("policy", "ucb")


def test_class_without_name_or_wrong_base_is_refused():
    class Nameless(Greedy):
        name = ""

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_register_policies=lambda: [Nameless]), name="nameless")
    with pytest.raises(PluginError, match="no 'name'"):
        Registry(pm)
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_register_sources=lambda: [Greedy]), name="wrong")
    with pytest.raises(PluginError, match="not a subclass"):
        Registry(pm)


def test_unknown_hook_name_is_a_plugin_error():
    module = types.ModuleType("typo")
    module.armlab_register_policys = hookimpl(lambda: [])
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(module, name="typo")
    with pytest.raises(Exception, match="armlab_register_policys"):
        pm.check_pending()


def test_blocked_builtin_is_not_registered(monkeypatch):
    monkeypatch.setenv("ARMLAB_BLOCK_PLUGINS", "armlab.plugins.sinks")
    registry = Registry(get_plugin_manager(load_entrypoints=False))
    assert registry.names("sink") == []


def test_entry_points_are_loaded_from_the_armlab_group(monkeypatch, fake_dist):
    fake_dist("armlab-ep-test", "1.0", {"ep_test": "armlab_ep_test"}, {"armlab_ep_test": (
        "from armlab import Policy, hookimpl\n"
        "class EntryPointPolicy(Policy):\n"
        "    name = 'test-entry-point'\n"
        "    def select(self, stats):\n"
        "        return stats.pulls.argmin(axis=1)\n"
        "@hookimpl\n"
        "def armlab_register_policies():\n"
        "    return [EntryPointPolicy]\n"
    )})
    registry = Registry(get_plugin_manager(load_entrypoints=True))
    assert registry.get("policy", "test-entry-point").__module__ == "armlab_ep_test"
    info = next(i for i in registry.infos("policy") if i.name == "test-entry-point")
    assert info.origin == "armlab-ep-test 1.0"
    monkeypatch.setenv("ARMLAB_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert "test-entry-point" not in Registry(get_plugin_manager()).names("policy")


def test_an_entry_point_that_fails_to_import_is_named_with_its_distribution(fake_dist):
    fake_dist("broken-pkg", "0.1", {"broken": "broken_pkg.plugin"})
    with pytest.raises(PluginError) as failure:
        get_plugin_manager(load_entrypoints=True)
    assert str(failure.value) == (
        "plugin entry point 'broken = broken_pkg.plugin' of distribution 'broken-pkg 0.1' failed to "
        "import: ModuleNotFoundError: No module named 'broken_pkg'; uninstall it or run with --no-plugins"
    )
    pm = get_plugin_manager(load_entrypoints=True, blocked=["broken"])  # blocked: never imported
    assert not pm.has_plugin("broken")


def test_registration_wrappers_run_through_pluggy_and_keep_provenance():
    """New-style (``wrapper=True``) and old-style (``hookwrapper=True``) wrappers of a
    registration hook wrap each plugin's registration; classes keep the plugin they came from."""
    wrapped = []

    def drop_ucb1():
        results = yield
        return [[cls for cls in found if cls.name != "ucb1"] for found in results]

    def watch_sources():
        outcome = yield
        wrapped.extend(cls.name for found in outcome.get_result() for cls in found)

    wrappers = types.ModuleType("armlab_test_wrappers")
    wrappers.drop = hookimpl(drop_ucb1, specname="armlab_register_policies", wrapper=True)
    wrappers.watch = hookimpl(watch_sources, specname="armlab_register_sources", hookwrapper=True)
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_register_policies=lambda: [Greedy]), name="test")
    pm.register(wrappers, name="wrappers")
    registry = Registry(pm)
    assert "ucb1" not in registry.names("policy")
    origins = {info.name: info.origin for info in registry.infos()}
    assert origins["test-greedy"] == "test" and origins["uniform"] == "armlab (built-in)"
    assert sorted(wrapped) == registry.names("source")


def test_plugins_add_step_observers_through_the_hook(make_config):
    class CountSteps:
        def __init__(self):
            self.steps = 0

        def after_step(self, sim):
            self.steps += 1

        def summary(self):
            return {"test_steps": self.steps}

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_step_observers=lambda plan: [CountSteps()]), name="steps")
    config = make_config(replicas=2, problem={"budget": 20})
    summary = run_experiment(config, registry=Registry(pm))
    assert summary["policies"]["uniform"]["test_steps"] > 0


@pytest.fixture
def fresh_default_registry():
    """Drop the per-process registry before and after a test that replaces what builds it."""
    default_registry.cache_clear()
    yield
    default_registry.cache_clear()


def test_runs_without_a_registry_share_the_one_built_per_process(monkeypatch, make_config, fresh_default_registry):
    built = []

    class CountedRegistry(Registry):
        def __init__(self, pm):
            built.append(pm)
            super().__init__(pm)

    monkeypatch.setattr(registry_module, "Registry", CountedRegistry)
    monkeypatch.setenv("ARMLAB_DISABLE_PLUGIN_AUTOLOAD", "1")
    config = make_config(replicas=2, problem={"budget": 20})
    run_experiment(config)
    run_experiment(config)
    assert App(load_entrypoints=None).registry is default_registry() is default_registry(False)
    assert len(built) == 1
    assert default_registry(True) is not default_registry() and len(built) == 2


def test_params_are_frozen_and_reject_unknown_fields(registry):
    cls = registry.get("policy", "ucb1")
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        cls.Params.model_validate({"explore": 1.0})
    params = cls.Params()
    with pytest.raises(Exception, match="frozen"):
        params.exploration = 3.0
