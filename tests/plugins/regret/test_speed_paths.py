"""The contract of tests/plugins/test_fast_paths.py for the regret policies' parameters that
take other code paths than the defaults: with the speed paths of ``armlab.plugins._fast`` and
inside ``reference_paths()`` (every helper recomputing from the statistics) a policy makes the
same choices, bit for bit, on Bernoulli or Gaussian arms, immediate and delayed, both tie rules."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.plugins.regret import EUCBV
from armlab.testing.choices import DELAYED_FEEDBACK, fast_and_reference_fingerprints

K = 12
MEANS = np.round(np.linspace(0.85, 0.1, K)[np.random.default_rng(5).permutation(K)], 3).tolist()
SOURCES = {
    "bernoulli": {"plugin": "bernoulli", "means": MEANS},
    "gaussian": {"plugin": "gaussian", "means": MEANS, "variances": 0.09},
}
FEEDBACK = {"immediate": {}, "delayed": DELAYED_FEEDBACK}
#: (policy, parameters, source): the variants whose code differs from the default's.
VARIANTS = [
    ("moss", {"horizon": "t"}, "gaussian"),
    ("klucb", {"divergence": "gaussian", "c": 3.0}, "gaussian"),
    ("klucb", {"solver": "bisection"}, "bernoulli"),
    ("klucb", {"c": 3.0}, "bernoulli"),
    ("bayes-ucb", {"posterior": "gaussian", "c": 1.0}, "gaussian"),
    ("bayes-ucb", {"c": 1.0}, "bernoulli"),
    ("eucbv", {"elim_count": "round", "log_uses": "M"}, "gaussian"),
    ("eucbv", {}, "bernoulli"),
    ("dmed", {"genuine": False}, "bernoulli"),
    ("ucbv", {"zeta": 1.0, "b": 2.0, "c": 0.5}, "gaussian"),
    ("median-elimination", {"epsilon": 0.9, "square": False, "estimates": "cumulative"}, "gaussian"),
    ("thompson", {"prior": "gaussian", "variance": 0.09}, "gaussian"),
]
TIES = {"thompson": [None], "dmed": [None], "median-elimination": [None]}
CASES = [
    pytest.param(name, params, source, feedback, tie,
                 id=f"{name}-{'-'.join(f'{k}={v}' for k, v in params.items()) or 'default'}-{source}-{feedback}"
                 + (f"-{tie}" if tie else ""))
    for name, params, source in VARIANTS
    for feedback in FEEDBACK
    for tie in TIES.get(name, ["lowest", "random"])
]


def config(name: str, params: dict, source: str, feedback: str, tie: str | None) -> dict:
    policy = {"plugin": name, **params, **({"tie_break": tie} if tie else {})}
    return {
        "name": "contract", "seed": 13, "replicas": 16, "checkpoints": [600],
        "problem": {"budget": 600, "objective": "regret"},
        "source": SOURCES[source], "feedback": FEEDBACK[feedback], "policies": [policy],
    }


@pytest.mark.parametrize(("name", "params", "source", "feedback", "tie"), CASES)
@pytest.mark.slow
def test_speed_paths_choose_as_the_reference_paths(name, params, source, feedback, tie):
    spec = config(name, params, source, feedback, tie)
    fast, reference = fast_and_reference_fingerprints(spec)
    assert fast == reference


def test_eucbv_never_pulls_an_arm_made_inactive_from_outside(hand):
    """A live run may retire an arm mid-run: the kept index learns it at the next selection."""
    h = hand(EUCBV(), 4, budget=5_000, replicas=3)
    means = np.array([0.5, 0.9, 0.6, 0.55])
    for _ in range(20):
        h.step(lambda arms: means[arms])
    assert (h.select() == 1).all()
    h.stats.active[:, 1] = False
    for _ in range(20):
        assert (h.step(lambda arms: means[arms]) != 1).all()
