"""The speed paths make the reference paths' choices, bit for bit, for every built-in policy.

Each built-in policy runs twice on the same seeded problems: as shipped, and inside
:func:`armlab.plugins._fast.reference_paths`, where every helper of ``armlab.plugins._fast``
recomputes its values from the statistics at every step.  The two runs must make the same
choices, stop the same replicas and recommend the same arms (:func:`choice_fingerprint`).

Problems: Bernoulli arms (exact index ties are frequent) and Gaussian arms (continuous
rewards), each with immediate feedback and with random delays and an in-flight limit (choices
with pending pulls, replicas out of step), K = 12 arms, R = 16 replicas; both tie-breaking
rules where the policy has them.
"""

from __future__ import annotations

import numpy as np
import pytest

from armlab.errors import ConfigError
from armlab.plugins._fast import reference_paths
from armlab.plugins.registry import default_registry
from armlab.problem import Objective
from armlab.testing.choices import DELAYED_FEEDBACK, fast_and_reference_fingerprints

K = 12
MEANS = np.round(np.linspace(0.85, 0.1, K)[np.random.default_rng(3).permutation(K)], 3).tolist()
SOURCES = {
    "bernoulli": {"plugin": "bernoulli", "means": MEANS},
    "gaussian": {"plugin": "gaussian", "means": MEANS, "variances": 0.09},
}
FEEDBACK = {"immediate": {}, "delayed": DELAYED_FEEDBACK}
PREFERENCE = (Objective.REGRET, Objective.TOP_M, Objective.BEST_ARM, Objective.THRESHOLD)
PROBLEM = {
    Objective.REGRET: {"objective": "regret"},
    Objective.TOP_M: {"objective": "top-m", "m": 3, "delta": 0.3, "epsilon": 0.1},
    Objective.BEST_ARM: {"objective": "best-arm", "delta": 0.3, "epsilon": 0.1},
    Objective.THRESHOLD: {"objective": "threshold", "threshold": 0.5},
}
#: Parameters that make a policy do more than its warm-up within the budget.
PARAMS = {"median-elimination": {"epsilon": 0.9, "square": False}, "vbr": {"gamma": 10.0}}
#: Parameters that let a policy take Gaussian rewards (its default assumes [0, 1]).
GAUSSIAN_PARAMS = {"thompson": {"prior": "gaussian"}, "ugapeb": {"b": 1.0}, "ugapec": {"b": 1.0}, "lucb1": {"b": 1.0},
                   "klucb": {"divergence": "gaussian"}}
BUDGET = 600


def builtin_policies() -> dict[str, type]:
    return {info.name: info.cls for info in default_registry(False).infos("policy")}


def config(name: str, cls: type, source: str, feedback: str, tie_break: str | None) -> dict:
    objective = next(o for o in PREFERENCE if o in cls.objectives)
    params = dict(PARAMS.get(name, {}))
    if source == "gaussian":
        params.update(GAUSSIAN_PARAMS.get(name, {}))
    if tie_break is not None:
        params["tie_break"] = tie_break
    return {
        "name": "contract", "seed": 11, "replicas": 16, "checkpoints": [BUDGET],
        "problem": {"budget": BUDGET, **PROBLEM[objective]},
        "source": SOURCES[source],
        "feedback": FEEDBACK[feedback],
        "policies": [{"plugin": name, **params}],
    }


def tie_rules(cls: type) -> list[str | None]:
    return ["lowest", "random"] if "tie_break" in cls.Params.model_fields else [None]


def in_inner_loop(source: str, feedback: str, tie: str | None) -> bool:
    """One case per policy runs in the inner loop (Bernoulli arms, delayed results, random ties
    where the policy has a tie rule: the most paths at once); the other cases are ``slow``."""
    return source == "bernoulli" and feedback == "delayed" and tie in ("random", None)


CASES = [
    pytest.param(name, source, feedback, tie, id=f"{name}-{source}-{feedback}" + (f"-{tie}" if tie else ""),
                 marks=() if in_inner_loop(source, feedback, tie) else pytest.mark.slow)
    for name, cls in sorted(builtin_policies().items())
    for source in SOURCES
    for feedback in FEEDBACK
    for tie in tie_rules(cls)
]


@pytest.mark.parametrize(("name", "source", "feedback", "tie"), CASES)
def test_speed_paths_choose_as_the_reference_paths(name, source, feedback, tie):
    spec = config(name, builtin_policies()[name], source, feedback, tie)
    try:
        fast, reference = fast_and_reference_fingerprints(spec)
    except ConfigError as exc:  # e.g. a Beta posterior refuses Gaussian rewards
        pytest.skip(f"{name} does not run on {source} arms: {exc}")
    assert fast == reference, f"{name}: the speed paths chose differently from the reference paths"


def test_the_switch_reaches_the_helpers():
    """The reference paths are really taken: a helper's fast path that would be wrong is not
    used inside the block (so the contract above compares two different computations)."""
    from armlab.plugins._fast.kept_arm_values import KeptArmValues

    calls = []

    class Counting(KeptArmValues):
        def compute(self, stats):
            calls.append(1)
            return super().compute(stats)

    stats_like = type("S", (), {"all_observed": lambda self: True})()
    index = Counting(lambda s, rows, flat: np.zeros(flat.size), 2, 3)
    index.current(stats_like)
    index.current(stats_like)
    assert len(calls) == 1  # fast: kept after the first computation
    with reference_paths():
        index.current(stats_like)
        index.current(stats_like)
    assert len(calls) == 3  # reference: recomputed at every call
