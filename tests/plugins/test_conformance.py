"""Every built-in policy meets armlab's policy contract (:func:`armlab.testing.check_policy`).

One case per built-in policy of the registry and objective it serves, with its default
parameters, plus the parameter variants whose code paths differ from the defaults (parameters
that only change a constant are covered by the policies' own unit tests).  The problem each
case runs on comes from two small tables: the family's (the package the policy lives in) and
the policy's own, for the few that need more budget or rewards in [0, 1].
"""

from __future__ import annotations

from typing import Any

import pytest

from armlab.plugins.registry import default_registry
from armlab.testing import check_policy

#: ``check_policy`` settings per policy family (the ``armlab.plugins`` package it lives in):
#: the fixed-confidence rules and greedy confidence pursuit are written for Bernoulli arms,
#: and the fixed-budget allocations reach their greedy rules within 200 trials.
FAMILY: dict[str, dict[str, Any]] = {
    "fixed_confidence": {"source": "bernoulli", "budget": 300},
    "gcp": {"source": "bernoulli", "budget": 200},
    "fixed_budget": {"budget": 200},
}

#: Settings of single policies, over their family's: Bernoulli arms for the rules whose
#: defaults assume rewards in [0, 1]; SHAdaVar's 13 forced pulls per arm need a larger budget
#: to reach its greedy rule.
POLICY: dict[str, dict[str, Any]] = {
    "klucb": {"source": "bernoulli"},
    "dmed": {"source": "bernoulli"},
    "bayes-ucb": {"source": "bernoulli"},
    "thompson": {"source": "bernoulli"},
    "shadavar": {"budget": 400},
}

#: ``(policy, params, objective, settings)``: variants beside the defaults, each on the
#: objective whose code path it changes; ``settings`` override the tables above.
VARIANTS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("ucb1", {"tie_break": "random"}, "best-arm", {}),
    ("eucbv", {"elim_count": "round", "log_uses": "M", "tie_break": "lowest"}, "regret", {}),
    ("klucb", {"divergence": "gaussian"}, "regret", {"source": "gaussian"}),
    ("bayes-ucb", {"posterior": "gaussian", "c": 1.0}, "regret", {"source": "gaussian"}),
    ("median-elimination", {"square": False}, "regret", {}),
    ("thompson", {"prior": "gaussian"}, "best-arm", {"source": "gaussian"}),
    ("augucb", {"tie_break": "random"}, "threshold", {}),
    ("augucb", {"variant": "authors-code"}, "threshold", {}),
    ("ucbe", {"tie_break": "random"}, "best-arm", {}),
    ("ucbe", {"variant": "authors-code"}, "threshold", {}),
    ("ucbev", {"variant": "authors-code", "tie_break": "random"}, "threshold", {}),
    ("csar", {"variant": "authors-code"}, "threshold", {}),
    ("uniform", {"order": "random"}, "threshold", {}),
    ("agapev-topm", {"tie_break": "random"}, "best-arm", {}),
    ("bayes-topm", {"normalize_by_sd": False, "exp_rate": 0.2}, "top-m", {}),
]

POLICIES = {info.name: info.cls for info in default_registry(False).infos("policy")}


def settings(name: str) -> dict[str, Any]:
    """The ``check_policy`` keywords of built-in policy ``name`` (family's, then its own)."""
    family = POLICIES[name].__module__.split(".")[-2]
    return {**FAMILY.get(family, {}), **POLICY.get(name, {})}


def cases() -> list[Any]:
    defaults = [
        pytest.param(name, {}, objective.value, settings(name), id=f"{name}-{objective.value}")
        for name, cls in POLICIES.items()
        for objective in sorted(cls.objectives, key=lambda o: o.value)
    ]
    variants = [
        pytest.param(name, params, objective, {**settings(name), **extra},
                     id=f"{name}-{objective}-" + "-".join(f"{k}={v}" for k, v in params.items()))
        for name, params, objective, extra in VARIANTS
    ]
    return defaults + variants


@pytest.mark.parametrize(("name", "params", "objective", "keywords"), cases())
def test_policy_contract(name, params, objective, keywords):
    """Shapes, determinism, replica independence, delayed feedback and exact replay."""
    check_policy(POLICIES[name], params, objective=objective, **keywords)


def test_the_tables_name_only_built_in_policies_and_families():
    families = {cls.__module__.split(".")[-2] for cls in POLICIES.values()}
    assert set(FAMILY) <= families
    assert set(POLICY) | {name for name, *_ in VARIANTS} <= set(POLICIES)
    for name, _, objective, _ in VARIANTS:
        assert objective in {o.value for o in POLICIES[name].objectives}, (name, objective)
