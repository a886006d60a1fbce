"""Reduced-scale statistical checks of UGapE and LUCB1 (seeded; tolerances from standard errors)."""

from __future__ import annotations

import math

import pytest

from armlab import run_experiment
from armlab.config import validate_config

pytestmark = pytest.mark.slow

INSTANCE = {"plugin": "bernoulli", "means": [0.9, 0.8, 0.7, 0.5]}  # the UGapE paper's instance


def run(problem, policies, replicas, seed=11, instance=INSTANCE):
    cfg = validate_config({
        "name": "stat", "seed": seed, "replicas": replicas, "checkpoints": [problem["budget"]],
        "problem": problem, "source": instance, "policies": policies,
    })
    return run_experiment(cfg)["policies"]


def test_stopping_rules_are_delta_correct_and_stop_later_for_smaller_delta():
    problem = {"objective": "top-m", "m": 2, "epsilon": 0.05, "budget": 20000, "delta": 0.3}
    policies = [{"plugin": "ugapec"}, {"plugin": "lucb1"},
                {"plugin": "ugapec", "label": "ugapec-strict", "delta": 0.01},
                {"plugin": "lucb1", "label": "lucb1-strict", "delta": 0.01}]
    out = run(problem, policies, replicas=60, instance={"plugin": "bernoulli", "means": [0.9, 0.75, 0.45, 0.3]})
    for label in out:
        entry = out[label]
        assert entry["stopped_fraction"] == 1.0
        assert entry["error_rate_at_stop"] <= (0.01 if "strict" in label else 0.3)
    for name in ("ugapec", "lucb1"):
        loose, strict = out[name], out[f"{name}-strict"]
        gap = strict["stopping_time_mean"] - loose["stopping_time_mean"]
        se = math.hypot(strict["stopping_time_stderr"], loose["stopping_time_stderr"])
        assert gap > 3 * se  # ln(1/delta) grows: a stricter delta stops later


def test_ugapeb_with_tuned_exploration_beats_uniform_allocation():
    problem = {"objective": "top-m", "m": 2, "epsilon": 0.05, "budget": 500}
    out = run(problem, [{"plugin": "ugapeb", "eta": 16.0}, {"plugin": "uniform"}], replicas=600)
    ugapeb, uniform = out["ugapeb"], out["uniform"]
    se = math.hypot(ugapeb["error_stderr"][-1], uniform["error_stderr"][-1])
    assert ugapeb["error_rate"][-1] + 2 * se < uniform["error_rate"][-1]
