"""The UGapE paper example configs run (at a tiny scale) and show what their headers claim."""

from __future__ import annotations

import pytest

from pathlib import Path

from armlab import run_experiment
from armlab.config import load_config, validate_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ugape"


def shipped(name):
    return load_config(EXAMPLES / name).model_dump(mode="python")


@pytest.mark.slow
def test_fixed_confidence_example():
    data = shipped("fixed_confidence.toml")
    assert [data["problem"][k] for k in ("delta", "m", "epsilon")] == [0.05, 2, 0.05]
    # a wider tolerance epsilon = 0.15 makes the rules stop within a small budget
    data.update(replicas=8, checkpoints=[2000, 6000])
    data["problem"].update(budget=6000, epsilon=0.15)
    out = run_experiment(validate_config(data))["policies"]
    assert set(out) == {"ugapec", "lucb1", "uniform"}
    for label in ("ugapec", "lucb1"):
        assert out[label]["stopped_fraction"] == 1.0
        assert out[label]["stopping_time_mean"] < 6000
        assert out[label]["error_rate_at_stop"] <= 0.05
    assert "stopping_time_mean" not in out["uniform"]


@pytest.mark.slow
def test_fixed_budget_example():
    data = shipped("fixed_budget.toml")
    data["replicas"] = 200
    data["sweep"]["values"] = [250, 500]
    summary = run_experiment(validate_config(data))
    assert summary["sweep"]["parameter"] == "problem.budget"
    errors = {label: entry["error_rate"] for label, entry in summary["policies"].items()}
    assert set(errors) == {"ugapeb-a*", "ugapeb-16a*", "uniform"}
    # the theory's a* explores too little at these budgets; 16 a* does far better
    assert errors["ugapeb-16a*"][1] < errors["ugapeb-a*"][1]
    assert errors["uniform"][1] <= errors["uniform"][0]
