"""The speed paths of the thresholding policies make the reference paths' choices in the
variants and instances the speed-path contract (tests/plugins/test_fast_paths.py) does not
run: the authors'-code variants and other parameters, and arms far from the threshold, on
which both AugUCB variants eliminate arm after arm until they stop (so
:class:`~armlab.plugins._fast.arms_to_retest.ArmsToRetest` decides which arms are tested).
Same choices, stops and recommendations, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.thresholding import AugUCB
from armlab.testing.choices import DELAYED_FEEDBACK, fast_and_reference_fingerprints

K = 12
MEANS = np.round(np.linspace(0.85, 0.1, K)[np.random.default_rng(3).permutation(K)], 3).tolist()
#: every arm at least 0.35 from tau = 0.5: the authors' code eliminates only once every key
#: is positive (an arm is eliminated when its key with observed counts is), so it needs these
FAR = [0.1, 0.9, 0.15, 0.85, 0.05, 0.95, 0.12, 0.88, 0.08, 0.92, 0.14, 0.86]
SOURCES = {
    "bernoulli": {"plugin": "bernoulli", "means": MEANS},
    "far-from-tau": {"plugin": "gaussian", "means": FAR, "variances": 0.01},
}
FEEDBACK = {"immediate": {}, "delayed": DELAYED_FEEDBACK}
CODE = {"variant": "authors-code"}
CODE_V1 = {"variant": "authors-code-v1"}
POLICIES = {
    "augucb-code": ("augucb", CODE),
    "augucb-code-v1": ("augucb", CODE_V1),
    "ucbe-code": ("ucbe", CODE),
    "ucbev-code": ("ucbev", CODE),
    "augucb-rho": ("augucb", {"rho": 0.1}),
    "ucbe-a": ("ucbe", {"a": 0.5}),
    "ucbev-unsquared": ("ucbev", {"squared": False, "b": 2.0}),
}
BUDGET = 600


@pytest.mark.parametrize("tie", ["lowest", "random"])
@pytest.mark.parametrize("feedback", FEEDBACK)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.slow
def test_speed_paths_choose_as_the_reference_paths(policy, source, feedback, tie):
    name, params = POLICIES[policy]
    spec = {
        "name": "contract", "seed": 11, "replicas": 16, "checkpoints": [BUDGET],
        "problem": {"budget": BUDGET, "objective": "threshold", "threshold": 0.5},
        "source": SOURCES[source], "feedback": FEEDBACK[feedback],
        "policies": [{"plugin": name, **params, "tie_break": tie}],
    }
    fast, reference = fast_and_reference_fingerprints(spec)
    assert fast == reference


@pytest.mark.parametrize("params", [{}, CODE, CODE_V1], ids=["paper", "authors-code", "authors-code-v1"])
def test_arms_far_from_tau_are_all_eliminated(simulate_gaussian, params):
    sim = simulate_gaussian(lambda: AugUCB(params), FAR, BUDGET, variances=0.01, replicas=4, seed=11, checkpoints=[100, BUDGET])
    assert not sim.stats[0].active.any() and (sim.stopped_at < 350).all()
