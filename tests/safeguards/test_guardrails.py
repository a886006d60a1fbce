"""Guardrail metrics: the retirement rule, its evidence, its error rate at the bound, and the
``[[guardrails]]`` / ``[stopping]`` tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from armlab.safeguards import GuardrailConfig, GuardrailMonitor, StoppingConfig


def test_the_rule_and_its_evidence_by_hand():
    monitor = GuardrailMonitor(GuardrailConfig(metric="latency_ms", max=300, range=(0, 1000)), 1, 3)
    seq = monitor.sequences
    seq.counts[0] = [10, 10, 0]
    seq.low[0], seq.high[0] = [310, 250, 0], [400, 350, 1000]
    assert monitor.breached().tolist() == [[True, False, False]]
    assert monitor.evidence(0) == {"metric": "latency_ms", "max": 300, "delta": 0.05,
                                   "interval": [310.0, 400.0], "n": 10}
    fed = GuardrailMonitor(GuardrailConfig(metric="latency_ms", max=300, range=(0, 1000)), 1, 2)
    for _ in range(200):
        fed.observe_one(0, 390.0)
        fed.observe_one(1, 290.0)
    assert fed.breached().tolist() == [[True, False]] and fed.evidence(0)["n"] == 200
    floor = GuardrailMonitor(GuardrailConfig(metric="conversion", min=0.1, scale=0.5), 1, 3)
    floor.sequences.counts[0] = [5, 5, 5]
    floor.sequences.low[0], floor.sequences.high[0] = [0.0, 0.05, 0.2], [0.09, 0.2, 0.3]
    assert floor.breached().tolist() == [[True, False, False]]


def retired_share(config, means, sd, runs, n, seed):
    """Per arm, the share of ``runs`` in which the arm was retired within ``n`` values each
    (normal values of mean ``means[k]`` and sd ``sd``, clipped to the range if one is declared)."""
    rng = np.random.default_rng(seed)
    k = len(means)
    monitor = GuardrailMonitor(config, runs, k)
    rows = np.arange(runs)
    ever = np.zeros((runs, k), dtype=bool)
    for _ in range(n):
        for arm in range(k):
            values = rng.normal(means[arm], sd, runs)
            if config.range is not None:
                values = np.clip(values, *config.range)
            monitor.observe(rows, np.full(runs, arm), values)
        ever |= monitor.breached()
    return ever.mean(axis=0)


SPREADS = [{"range": (0, 1000)}, {"scale": 60.0}]


@pytest.mark.parametrize("spread", SPREADS, ids=["range", "scale"])
def test_an_arm_20_percent_above_the_bound_is_retired_and_one_at_the_bound_rarely(spread):
    config = GuardrailConfig(metric="latency_ms", max=300, delta=0.05, **spread)
    share = retired_share(config, [360.0, 300.0], sd=60.0, runs=500, n=400, seed=32)
    assert share[0] == 1.0
    assert share[1] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 500)


def test_a_min_guardrail_retires_an_arm_20_percent_below():
    config = GuardrailConfig(metric="conversion", min=0.5, range=(0, 1), delta=0.05)
    share = retired_share(config, [0.4, 0.5], sd=0.1, runs=200, n=400, seed=35)
    assert share[0] == 1.0 and share[1] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)


@pytest.mark.parametrize(("fields", "message"), [
    ({"metric": "x", "range": (0, 1)}, "guardrail 'x' needs exactly one of max or min, e.g. max = 300"),
    ({"metric": "x", "max": 1, "min": 0, "range": (0, 1)}, "exactly one of max or min"),
    ({"metric": "x", "max": 1}, "exactly one of range or scale: range = \\[0, 1000\\]"),
    ({"metric": "x", "max": 1, "range": (0, 2), "scale": 1}, "exactly one of range or scale"),
    ({"metric": "x", "max": 1, "range": (2, 0)}, "needs low < high"),
    ({"metric": "x", "max": 5, "range": (0, 2)}, "the bound 5.0 lies outside range = \\[0.0, 2.0\\]"),
    ({"metric": "x", "max": 1, "scale": 0}, "scale"),
    ({"metric": "x", "max": 1, "scale": 1, "delta": 1.5}, "delta"),
    ({"metric": "x", "max": 1, "scale": 1, "limit": 3}, "limit"),
])
def test_guardrail_tables_are_checked_with_the_fix(fields, message):
    with pytest.raises(ValidationError, match=message):
        GuardrailConfig(**fields)


def test_stopping_table():
    assert StoppingConfig(rule="anytime").delta == 0.05
    with pytest.raises(ValidationError, match="rule"):
        StoppingConfig(rule="lucb", delta=0.05)
    with pytest.raises(ValidationError, match="delta"):
        StoppingConfig(rule="anytime", delta=0)
