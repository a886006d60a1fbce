"""examples/cumulative_regret: every file is current, describes the seed's setup, and runs at small scale."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from armlab import run_experiment
from armlab.config import load_config, validate_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "cumulative_regret"
FILES = sorted(p.name for p in EXAMPLES.glob("*.toml"))


def load_generator():
    spec = importlib.util.spec_from_file_location("cumulative_regret_generate", EXAMPLES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def small(name: str, budget: int, replicas: int = 3):
    """The shipped file with a small budget and few replicas."""
    data = load_config(EXAMPLES / name).model_dump(mode="python")
    data["problem"]["budget"] = budget
    data["replicas"] = replicas
    data["checkpoint_every"] = None
    return validate_config(data)


def test_generated_files_are_current():
    generator = load_generator()
    assert generator.main(["--check"]) == 0
    assert FILES == sorted(generator.experiments())


@pytest.mark.parametrize(
    ("name", "k", "budget", "labels"),
    [
        ("exp1_bernoulli.toml", 20, 60_000,
         {"eucbv", "moss", "ucb1", "ucbv", "kl-ucb", "ts", "bayes-ucb", "dmed", "ocucb", "eucbv-log-M"}),
        ("exp2_failure_of_ts.toml", 100, 300_000,
         {"eucbv", "moss", "ocucb", "ucb1", "ts", "ucb-improved", "median-elimination", "bayes-ucb-gauss",
          "kl-ucb-gauss"}),
        ("exp4_advanced.toml", 100, 300_000,
         {"eucbv", "moss", "ocucb", "ts", "ucbv", "kl-ucb-gauss", "bayes-ucb-gauss", "ucb1"}),
    ] + [(f"exp3_k{k:03d}.toml", k, 100_000 + k**3, {"eucbv", "moss", "ocucb", "ts"}) for k in range(20, 101, 10)],
)
def test_files_hold_the_seed_setup(name, k, budget, labels):
    cfg = load_config(EXAMPLES / name)
    assert cfg.replicas == 100 and cfg.problem.objective.value == "regret"
    assert cfg.problem.budget == budget
    means = cfg.source.params["means"]
    assert len(means) == k and means.index(max(means)) == k - 1
    assert {p.display_label for p in cfg.policies} == labels
    for p in cfg.policies:
        if p.plugin == "ucb1":
            assert p.params["tie_break"] == "random"
        if cfg.source.plugin == "gaussian" and p.plugin in ("thompson", "klucb", "bayes-ucb"):
            assert "gaussian" in p.params.values()


def check_regret(summary, budget, max_gap):
    for label, entry in summary["policies"].items():
        curve = entry["regret_mean"]
        assert all(b >= a for a, b in zip(curve, curve[1:], strict=False)), label
        assert 0 < curve[-1] <= budget * max_gap + 1e-9, label


def test_experiment_1_small():
    summary = run_experiment(small("exp1_bernoulli.toml", 200))
    check_regret(summary, 200, 0.03)


def test_experiment_2_small():
    summary = run_experiment(small("exp2_failure_of_ts.toml", 400))
    check_regret(summary, 400, 0.2)
    policies = summary["policies"]
    # round robin inside Median Elimination's first round: regret T * mean gap, exactly
    assert policies["median-elimination"]["regret_mean"][-1] == pytest.approx(400 * 0.132)
    # KL-UCB-Gauss with variance 1 and c = 0 has UCB1's index
    assert policies["kl-ucb-gauss"]["regret_mean"][-1] == pytest.approx(policies["ucb1"]["regret_mean"][-1], rel=0.05)


def test_experiment_4_small():
    summary = run_experiment(small("exp4_advanced.toml", 400))
    check_regret(summary, 400, 0.5)


def test_experiment_3_files_run_and_tabulate(tmp_path):
    dirs = []
    for k in range(20, 101, 10):
        out = tmp_path / f"k{k:03d}"
        summary = run_experiment(small(f"exp3_k{k:03d}.toml", 2 * k, replicas=2), out_dir=out)
        check_regret(summary, 2 * k, 0.05)
        dirs.append(out)
    table = load_generator().final_regret_table(dirs[::-1]).splitlines()
    assert table[0].split()[:2] == ["K", "T"] and len(table) == 10
    assert [int(line.split()[0]) for line in table[1:]] == list(range(20, 101, 10))
    assert [int(line.split()[1]) for line in table[1:]] == [2 * k for k in range(20, 101, 10)]


def test_table_of_a_directory_without_summary_names_it(tmp_path):
    with pytest.raises(SystemExit, match=r"empty[/\\]summary\.json does not exist"):
        load_generator().final_regret_table([tmp_path / "empty"])


# -- results files behind the headers ---------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_results_file_describes_its_file(name):
    generator = load_generator()
    results = generator.results_of(name)
    assert results is not None, f"no results for {name}: run generate.py --run {name.removesuffix('.toml')}"
    config = generator.headers.config_from_text(generator.body(name, generator.experiments()[name]))
    assert results["name"] == config.name and results["seed"] == config.seed
    run = results["run"]
    assert run["replicas"] == generator.RUN_REPLICAS.get(name, config.replicas)
    assert run["budget"] == config.problem.budget and run["checkpoints"] == config.checkpoint_list()
    assert list(run["policies"]) == [p.display_label for p in config.policies]
    assert all(len(column) == run["replicas"] for entry in run["policies"].values() for column in entry["outcomes"])
    assert results["check"]["budget"] < config.problem.budget


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_rerunning_the_check_gives_the_recorded_results(name):
    """Fails when a policy's behaviour on this file changed: rerun ``generate.py --run STEM``
    so that the results file and the header say what it does now."""
    generator = load_generator()
    config = generator.headers.config_from_text(generator.body(name, generator.experiments()[name]))
    assert generator.headers.differences(config, generator.results_of(name)) == []
