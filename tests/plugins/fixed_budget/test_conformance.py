"""Every fixed-budget policy meets armlab's policy contract (armlab.testing.check_policy)."""

from __future__ import annotations

import pytest

from armlab.plugins.fixed_budget import armlab_register_policies
from armlab.plugins.fixed_budget.gape import AGapEV, GapE, GapEV
from armlab.plugins.fixed_budget.sh_variance import SHAdaVar
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry
from armlab.testing import check_policy

POLICIES = armlab_register_policies()


@pytest.mark.parametrize("cls", POLICIES, ids=lambda cls: cls.name)
def test_best_arm_contract(cls):
    # SHAdaVar's 13 forced pulls per arm need a larger budget to reach its greedy rule
    check_policy(cls, objective="best-arm", budget=400 if cls is SHAdaVar else 200)


@pytest.mark.parametrize("cls", [GapE, GapEV, AGapEV], ids=lambda cls: cls.name)
def test_top_m_contract(cls):
    check_policy(cls, objective="top-m", budget=200)


def test_registered_under_the_names_configs_use():
    registry = Registry(get_plugin_manager(load_entrypoints=False))
    names = {"sr", "vbr", "shvar", "shadavar", "gape", "gapev", "agapev"}
    assert {cls.name for cls in POLICIES} == names
    for name in names:
        assert registry.get("policy", name) in POLICIES
