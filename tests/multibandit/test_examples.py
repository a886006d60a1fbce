"""The greedy-confidence-pursuit paper multi-bandit example configs run at a tiny scale and report their metrics."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from armlab import run_experiment
from armlab.config import load_config, validate_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "confidence_pursuit_multi"
WARMUP_PER_ARM = 2  # the shipped 20 pulls per arm of every bandit, shrunk with the budget
WARMUP = WARMUP_PER_ARM * 10  # trials every ten-armed bandit gets before the rules start


def shrunk(name, budget, replicas=2):
    data = load_config(EXAMPLES / name).model_dump(mode="python")
    data.update(replicas=replicas, checkpoint_every=None, checkpoints=[budget // 2, budget])
    data["problem"]["budget"] = budget
    for entry in data["policies"]:
        for table in (entry, entry["allocator"]):
            if "warmup_per_arm" in table:
                assert table["warmup_per_arm"] == 20  # the authors' code
                table["warmup_per_arm"] = WARMUP_PER_ARM
    return validate_config(data)


@pytest.mark.parametrize(("name", "bandits", "labels", "budget"), [
    ("fig4a.toml", 20, {"GCP-Bayes", "Uni-UCB", "Gab-UCB", "MAP-UCB"}, 60000),
    ("fig4b.toml", 15, {"GCP-Bayes", "MAP-UCB", "Uni-UCB"}, 80000),
    ("fig5.toml", 20, {"GCP-targeted", "Uni-UCB", "MAP-UCB"}, 60000),
])
@pytest.mark.slow
def test_multi_bandit_figures(name, bandits, labels, budget):
    shipped = load_config(EXAMPLES / name)
    assert shipped.replicas == 100 and shipped.problem.budget == budget
    assert len(shipped.bandit_list()) == bandits
    small = bandits * WARMUP + 150
    out = run_experiment(shrunk(name, small))["policies"]
    assert set(out) == labels
    for entry in out.values():
        assert len(entry["bandit_labels"]) == bandits
        trials = entry["bandit_trials_mean"]
        assert sum(trials) == pytest.approx(small)  # the budget is shared, none is lost
        assert min(trials) >= WARMUP  # the warm-up reached every arm of every bandit
        assert len(entry["bandits_completed_mean"]) == 2
        assert 0 <= entry["bandits_completed_mean"][0] <= entry["bandits_completed_mean"][1] <= bandits
    if name == "fig5.toml":
        for entry in out.values():
            assert entry["target_best_bandits_mean"] == 5  # the target arm is best in 5 bandits
            assert entry["target_best_completed_mean"][1] <= entry["bandits_completed_mean"][1]


def load_fig3():
    spec = importlib.util.spec_from_file_location("fig3", EXAMPLES / "fig3_cost_predictiveness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_fig3_cost_predicts_completion_time(tmp_path):
    out = tmp_path / "fig3.json"
    load_fig3().main(["--bandits", "6", "--runs", "2", "--horizon", "2000", "--out", str(out)])
    result = json.loads(out.read_text())
    assert set(result["subsets"]) == {"1", "3", "5"}
    for entry in result["subsets"].values():
        times = entry["mean_completion_time"]
        assert len(times) == len(entry["cost"]) == 6
        assert all(101 <= t <= 2000 for t in times)  # completion needs 101 records >= 0.98
        assert all(c > 0 for c in entry["cost"])
    assert result["subsets"]["1"]["spearman"] > 0  # costlier bandits take longer
