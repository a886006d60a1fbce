"""The heterogeneous-variance paper example configs: faithful to the paper's setup, and runnable (at a tiny scale)."""

from __future__ import annotations

from pathlib import Path

import pytest

from armlab import run_experiment
from armlab.config import load_config, validate_config

DIR = Path(__file__).resolve().parents[3] / "examples" / "heterogeneous_variances"
PAPER_METHODS = ["unif", "sh", "gape", "gapev", "vbr", "shvar", "shadavar"]
CONFIGS = {
    "fig2_budget.toml": ("problem.budget", [1000, 2000, 3000, 5000, 7500, 10000, 15000, 20000], [400, 800]),
    "fig2_budget_odd.toml": ("problem.budget", [1000, 2000, 3000, 5000, 7500, 10000, 15000, 20000], [400, 800]),
    "fig3_arms.toml": ("source.n_arms", [32, 40, 48, 56, 64], [8, 12]),
    "fig3_arms_odd.toml": ("source.n_arms", [32, 40, 48, 56, 64], [8, 12]),
}


def test_every_example_is_covered():
    assert sorted(p.name for p in DIR.glob("*.toml")) == sorted(CONFIGS)


@pytest.mark.parametrize("name", CONFIGS)
def test_config_matches_the_papers_setup(name):
    config = load_config(DIR / name)
    parameter, values, _ = CONFIGS[name]
    assert config.replicas == 5000 and config.problem.objective.value == "best-arm"
    assert config.sweep.parameter == parameter and config.sweep.values == values
    assert config.source.plugin == "heterogeneous-gaussian"
    assert config.source.params.get("n_arms") == 64 and config.problem.budget in (5000, 20000)
    assert config.source.params.get("high_variance_arms", "even") == ("odd" if "_odd" in name else "even")
    assert [p.display_label for p in config.policies] == PAPER_METHODS
    assert all(p.params == {} for p in config.policies)  # the defaults are the heterogeneous-variance paper's settings
    header = (DIR / name).read_text(encoding="utf-8").split("\nname = ")[0]
    assert "Paper" in header and "Ours" in header and "armlab run" in header


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.slow
def test_runs_at_a_tiny_scale(name):
    parameter, _, small = CONFIGS[name]
    data = load_config(DIR / name).model_dump(mode="python")
    data.update(replicas=12)
    data["sweep"]["values"] = small
    if parameter == "source.n_arms":
        data["problem"]["budget"] = 300
    summary = run_experiment(validate_config(data))
    assert summary["sweep"]["values"] == small and len(summary["runs"]) == len(small)
    assert list(summary["policies"]) == PAPER_METHODS
    for entry in summary["policies"].values():
        assert len(entry["error_rate"]) == len(small)
        assert all(0.0 <= e <= 1.0 for e in entry["error_rate"])
    if parameter == "problem.budget":  # each budget is a run from scratch with its own schedule
        assert [run["budget"] for run in summary["runs"]] == small
        assert summary["runs"][0]["checkpoints"][-1] == small[0]
