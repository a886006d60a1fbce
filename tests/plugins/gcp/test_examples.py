"""The greedy-confidence-pursuit paper single-bandit example configs run at a tiny scale and report their metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from armlab import run_experiment
from armlab.config import load_config, validate_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "confidence_pursuit"
LABELS = {"bayes", "pac", "ucb"}


def tiny(name, replicas, budget, checkpoints, sweep_values=None):
    """The shipped config with fewer replicas, a shorter horizon (and fewer sweep values)."""
    data = load_config(EXAMPLES / name).model_dump(mode="python")
    data.update(replicas=replicas, checkpoints=checkpoints, checkpoint_every=None)
    data["problem"]["budget"] = budget
    if sweep_values is not None:
        data["sweep"]["values"] = sweep_values
    return validate_config(data)


@pytest.mark.parametrize(("name", "m"), [("fig1_best_arm.toml", 1), ("fig1_top_half.toml", 5)])
@pytest.mark.slow
def test_fig1_confidence_curves(name, m):
    shipped = load_config(EXAMPLES / name)
    assert shipped.metrics.confidence and shipped.problem.budget == 10000
    assert (shipped.problem.m or 1) == m == shipped.source.params["m"]
    cfg = tiny(name, replicas=4, budget=450, checkpoints=[150, 300, 450])
    out = run_experiment(cfg)["policies"]
    assert set(out) == LABELS
    for entry in out.values():
        curve = entry["confidence_mean"]
        assert len(curve) == 3 and all(0.0 <= c <= 1.0 for c in curve)
        assert curve[-1] >= curve[0]  # evidence accumulates


@pytest.mark.parametrize("name", ["fig2_completion.toml", "fig2_completion_delayed.toml"])
@pytest.mark.slow
def test_fig2_completion_sweep(name):
    shipped = load_config(EXAMPLES / name)
    assert shipped.sweep.parameter == "source.n_arms" and shipped.sweep.values == [5, 10, 20, 50, 100]
    delayed = name.endswith("delayed.toml")
    assert (shipped.feedback.delay_model, shipped.feedback.delay) == (("batch", 100) if delayed else ("fixed", 0))
    cfg = tiny(name, replicas=2, budget=800, checkpoints=[800], sweep_values=[5, 10])
    summary = run_experiment(cfg)
    assert [run["sweep_value"] for run in summary["runs"]] == [5, 10]
    for run in summary["runs"]:
        assert set(run["policies"]) == LABELS
        for entry in run["policies"].values():
            assert 101 <= entry["completion_time_median"] <= 800
            assert 0.0 <= entry["not_completed_fraction"] <= 1.0
