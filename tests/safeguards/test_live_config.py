"""The safeguard tables of a live experiment are checked before it runs (issue 32).

``[[guardrails]]`` need a policy that can retire arms, ``[stopping] rule = "anytime"`` needs a
declared reward range, and neither applies to a Monte Carlo run: each refusal names the
field and the fix.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from armlab.config import validate_config
from armlab.errors import ConfigError
from armlab.plan import build_plan
from tests.conftest import EXTERNAL_EXPERIMENT

GUARD = {"metric": "latency_ms", "max": 300, "range": [0, 1000]}


def _config(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(EXTERNAL_EXPERIMENT)
    data.update(changes)
    return data


def test_a_live_experiment_with_every_safeguard_builds(registry) -> None:
    config = validate_config(_config(guardrails=[GUARD], stopping={"rule": "anytime", "delta": 0.1}))
    plan = build_plan(config, registry)
    assert plan.config.guardrails[0].metric == "latency_ms"
    assert plan.config.stopping.delta == 0.1


def test_guardrails_need_a_policy_that_can_retire_arms(registry) -> None:
    config = validate_config(_config(guardrails=[GUARD], policies=[{"plugin": "sr"}]))
    with pytest.raises(ConfigError, match=r"guardrails: policy 'sr' cannot retire arms.*ucb1"):
        build_plan(config, registry)


def test_anytime_stopping_needs_a_declared_reward_range(registry) -> None:
    source = {"plugin": "external", "arms": 3}
    config = validate_config(_config(source=source, stopping={"rule": "anytime"}, policies=[{"plugin": "ucb1"}]))
    with pytest.raises(ConfigError, match="stopping: .*declare the source's reward range"):
        build_plan(config, registry)


def test_safeguards_are_refused_for_a_monte_carlo_run(registry) -> None:
    config = validate_config(_config(source={"plugin": "bernoulli", "means": [0.2, 0.5]},
                                     guardrails=[GUARD]))
    with pytest.raises(ConfigError, match=r"guardrails: the safeguards watch live experiments.*remove it"):
        build_plan(config, registry)


@pytest.mark.parametrize(("changes", "message"), [
    ({"guardrails": [{"metric": "x", "range": [0, 1]}]}, "needs exactly one of max or min"),
    ({"guardrails": [GUARD, GUARD]}, "keep one \\[\\[guardrails\\]\\] per metric"),
    ({"stopping": {"rule": "sometimes"}}, "stopping.rule"),
    ({"stopping": {"rule": "anytime", "delta": 1.5}}, "stopping.delta"),
])
def test_bad_safeguard_tables_name_the_field(changes, message) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_config(_config(**changes))
