"""Paired comparisons (`summary["comparisons"]`, `armlab compare`) and the provenance that
lets a summary reproduce its run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.config import validate_config

REGRET = {
    "name": "pairs", "seed": 3, "replicas": 60, "checkpoints": [200, 400],
    "problem": {"objective": "regret", "budget": 400},
    "source": {"plugin": "bernoulli", "means": [0.5, 0.45, 0.4, 0.3]},
    "policies": [{"plugin": "ucb1"}, {"plugin": "ucb1", "label": "ucb1-c05", "exploration": 0.5},
                 {"plugin": "uniform"}],
}


@pytest.fixture
def summary(tmp_path, registry):
    run_experiment(validate_config(REGRET), registry=registry, out_dir=tmp_path / "out")
    return json.loads((tmp_path / "out" / "summary.json").read_text())


def test_paired_differences_are_the_replica_by_replica_differences(summary):
    comparisons = summary["comparisons"]
    assert comparisons["metric"] == "regret" and comparisons["replicas"] == 60
    assert [(p["first"], p["second"]) for p in comparisons["pairs"]] == [
        ("ucb1", "ucb1-c05"), ("ucb1", "uniform"), ("ucb1-c05", "uniform")]
    regret = {label: entry["regret_mean"][-1] for label, entry in summary["policies"].items()}
    for pair in comparisons["pairs"]:
        assert pair["difference"] == pytest.approx(regret[pair["first"]] - regret[pair["second"]])
        low, high = pair["ci95"]
        assert low < pair["difference"] < high and pair["significant"] == (low > 0 or high < 0)
    uniform = comparisons["pairs"][1]
    assert uniform["significant"] and uniform["difference"] < 0  # UCB1 beats round robin
    # the same rewards for the same pulls: pairing removes most of the noise
    assert comparisons["pairs"][0]["stderr"] < 0.8 * comparisons["pairs"][0]["unpaired_stderr"]


def test_a_summary_records_what_reproduces_its_run(summary):
    provenance = summary["provenance"]
    assert {"config", "armlab", "numpy", "python", "platform", "finished_at", "command"} <= provenance.keys()
    assert {"plugin": "ucb1", "label": "ucb1-c05", "exploration": 0.5}.items() <= provenance["config"]["policies"][1].items()
    assert validate_config(provenance["config"]) == validate_config(REGRET)  # the config, whole


def test_armlab_compare_prints_each_pair(tmp_path, summary):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    result = CliRunner().invoke(cli, ["--no-plugins", "compare", str(path)])
    assert result.exit_code == 0, result.output
    assert "paired differences of the final regret (60 replicas)" in result.output
    line = next(line for line in result.output.splitlines() if "ucb1 - uniform" in line)
    assert line.rstrip().endswith("*")
    alone = {**summary, "policies": {"ucb1": summary["policies"]["ucb1"]}}
    del alone["comparisons"]
    path.write_text(json.dumps(alone))
    refused = CliRunner().invoke(cli, ["--no-plugins", "compare", str(path)])
    assert refused.exit_code == 2 and "no comparisons in this summary" in refused.output
