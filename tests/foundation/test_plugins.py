"""Plugin registration: built-ins and test plugins go through the same hooks."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from armlab import ScalarPolicy, hookimpl
from armlab.errors import DuplicatePluginError, PluginError, UnknownPluginError
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.manager import BUILTIN_PLUGINS, get_plugin_manager
from armlab.plugins.registry import Registry
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
    class Clash(Greedy):
        name = "ucb1"

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_module(armlab_register_policies=lambda: [Clash]), name="clash")
    with pytest.raises(DuplicatePluginError, match=r"'ucb1'.*UCB1.*Clash"):
        Registry(pm)


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


def test_entry_points_are_loaded_from_the_armlab_group(monkeypatch, tmp_path):
    dist = tmp_path / "armlab_ep_test-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: armlab-ep-test\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[armlab]\nep_test = armlab_ep_test\n")
    (tmp_path / "armlab_ep_test.py").write_text(
        "from armlab import Policy, hookimpl\n"
        "class EntryPointPolicy(Policy):\n"
        "    name = 'test-entry-point'\n"
        "    def select(self, stats):\n"
        "        return stats.pulls.argmin(axis=1)\n"
        "@hookimpl\n"
        "def armlab_register_policies():\n"
        "    return [EntryPointPolicy]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry(get_plugin_manager(load_entrypoints=True))
    assert registry.get("policy", "test-entry-point").__module__ == "armlab_ep_test"
    info = next(i for i in registry.infos("policy") if i.name == "test-entry-point")
    assert info.origin == "armlab-ep-test 1.0"
    sys.modules.pop("armlab_ep_test", None)
    monkeypatch.setenv("ARMLAB_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert "test-entry-point" not in Registry(get_plugin_manager()).names("policy")


def test_params_are_frozen_and_reject_unknown_fields(registry):
    cls = registry.get("policy", "ucb1")
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        cls.Params.model_validate({"explore": 1.0})
    params = cls.Params()
    with pytest.raises(Exception, match="frozen"):
        params.exploration = 3.0
