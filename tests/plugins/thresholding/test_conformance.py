"""Every thresholding policy (and UA) meets armlab's policy contract."""

from __future__ import annotations

import pytest

from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.registry import Registry
from armlab.plugins.thresholding import APT, CSAR, UCBE, UCBEV, AugUCB
from armlab.testing import check_policy


@pytest.mark.parametrize(
    ("cls", "params", "objective"),
    [
        (AugUCB, {"tie_break": "random"}, "threshold"),
        (APT, {}, "threshold"),
        (UCBE, {}, "threshold"),
        (UCBE, {"tie_break": "random"}, "best-arm"),
        (UCBEV, {}, "threshold"),
        (CSAR, {}, "threshold"),
        (AugUCB, {"variant": "authors-code"}, "threshold"),
        (UCBE, {"variant": "authors-code"}, "threshold"),
        (UCBEV, {"variant": "authors-code", "tie_break": "random"}, "threshold"),
        (CSAR, {"variant": "authors-code"}, "threshold"),
        (Uniform, {"order": "random"}, "threshold"),
    ],
)
def test_check_policy(cls, params, objective):
    check_policy(cls, params, objective=objective)


def test_registered_under_their_names():
    registry = Registry(get_plugin_manager(load_entrypoints=False))
    for cls in (AugUCB, APT, UCBE, UCBEV, CSAR):
        assert registry.get("policy", cls.name) is cls
