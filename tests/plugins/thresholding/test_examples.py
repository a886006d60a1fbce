"""The thresholding example configs (examples/thresholding): generated exactly, faithful to the
paper (exp*.toml) or to the authors' runs (published/), and their headers' numbers backed by
results files that a cheap re-run checks."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from armlab import run_experiment
from armlab.config import load_config
from armlab.plan import build_plan
from armlab.random import KeyedRandom

DIR = Path(__file__).resolve().parents[3] / "examples" / "thresholding"
EXPERIMENTS = range(1, 7)
# the paper: means of arms 1-10, variances of arms 1-5 / 6-10, interval of arms 11-100
PAPER = {
    1: ([0.2, 0.25, 0.3, 0.35, 0.45, 0.55, 0.65, 0.7, 0.75, 0.8], 0.5, 0.6, (0.38, 0.42)),
    2: ([0.2, 0.36, 0.392, 0.3984, 0.45, 0.55, 0.6016, 0.608, 0.64, 0.8], 0.5, 0.6, (0.38, 0.42)),
    3: ([0.1] * 3 + [0.35, 0.45, 0.55, 0.65] + [0.9] * 3, 0.5, 0.6, (0.38, 0.42)),
    4: ([0.45] * 5 + [0.55] * 5, 0.5, 0.6, (0.38, 0.42)),
    5: ([0.45] * 5 + [0.55] * 5, 0.3, 0.8, (0.2, 0.3)),
}
PAPER[6] = PAPER[5]
# as the authors ran them: standard deviations of arms 1-5 / 6-10, interval of arms 11-100
CODE_SDS = {**dict.fromkeys((1, 2, 3, 4), (0.5, 0.6, (0.3, 0.4))), 5: (0.3, 0.8, (0.2, 0.3)),
            6: (0.3, 0.8, (0.2, 0.3))}
SHIPPED = [f"exp{exp}" for exp in EXPERIMENTS] + [f"published/exp{exp}" for exp in EXPERIMENTS]
# run for the headers' evidence, not shipped as configs
EVIDENCE = ["published/exp1-other", "published/exp1-scales", "published/exp5-scales"] + [
    f"published/exp{exp}-v1" for exp in (1, 2, 4, 5, 6)]  # AugUCB "authors-code-v1"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return _load("thresholding_generate", DIR / "generate.py")


def _toml(key: str) -> dict:
    return tomllib.loads((DIR / f"{key}.toml").read_text(encoding="utf-8"))


def test_generator_reproduces_the_shipped_files(generator):
    assert generator.main(["--check"]) == 0


def test_help_rewrites_nothing(generator, capsys):
    files = sorted(DIR.rglob("*.toml")) + sorted((DIR / "results").glob("*.json"))
    before = {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in files}
    with pytest.raises(SystemExit) as stop:
        generator.main(["--help"])
    assert stop.value.code == 0
    assert "--run" in capsys.readouterr().out
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in files} == before


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_paper_instance_matches_the_paper(exp):
    first, var_low, var_high, (lo, hi) = PAPER[exp]
    source = _toml(f"exp{exp}")["source"]
    means, variances = np.asarray(source["means"]), np.asarray(source["variances"])
    assert means.size == variances.size == 100
    np.testing.assert_allclose(means[:10], first)
    assert (means[10:] == 0.4).all()
    assert np.flatnonzero(means >= 0.5).tolist() == [5, 6, 7, 8, 9]  # S_tau = arms 6-10
    assert (variances[:5] == var_low).all() and (variances[5:10] == var_high).all()
    assert ((variances[10:] >= lo) & (variances[10:] <= hi)).all()
    assert np.unique(variances[10:]).size > 50  # drawn, not constant


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_published_instance_is_the_authors_run(exp, generator):
    low, high, (lo, hi) = CODE_SDS[exp]
    config = _toml(f"published/exp{exp}")
    means, variances = np.asarray(config["source"]["means"]), np.asarray(config["source"]["variances"])
    sds = np.sqrt(variances)  # the source takes variances: the listed standard deviations squared
    first = generator.SCRIPT_MEANS_1 if exp == 1 and generator.EXP1_READING == "script" else PAPER[exp][0]
    np.testing.assert_allclose(means[:10], first)
    assert (means[10:] == 0.4).all()
    np.testing.assert_allclose(sds[:10], [low] * 5 + [high] * 5)
    assert ((sds[10:] >= lo - 1e-12) & (sds[10:] <= hi + 1e-12)).all()
    assert np.unique(sds[10:]).size > 50
    np.testing.assert_allclose(variances[10:], np.round(sds[10:], 4) ** 2, atol=1e-12)  # sds have 4 decimals
    for table in config["policies"]:
        if table["plugin"] in ("augucb", "ucbe", "ucbev", "csar"):
            assert table["variant"] == "authors-code"
        if table["plugin"] == "uniform":
            assert table["order"] == "random"
    plugins = [table["plugin"] for table in config["policies"]]
    if exp == 6:  # the published figure 1f: AugUCB and UCBEV with a = 4^i (8/9)(T - 2K)/H, i = -1, 0, 4
        assert plugins == ["augucb", "ucbev", "ucbev", "ucbev"]
        assert [t.get("a_scale") for t in config["policies"][1:]] == [0.25, 1.0, 256.0]
    else:
        assert plugins == ["augucb", "apt", "ucbe", "ucbev", "csar", "uniform"]


def test_values_drawn_once_per_experiment_and_shared_by_5_and_6():
    """The draw keys are the strings the shipped instances were drawn with (generate.py)."""
    for folder in ("", "published/"):
        assert _toml(f"{folder}exp6")["source"] == _toml(f"{folder}exp5")["source"]
        assert _toml(f"{folder}exp1")["source"]["variances"] != _toml(f"{folder}exp2")["source"]["variances"]
    u = KeyedRandom(2017, "seed000-variances", 1, replicas=np.array([0])).uniform(0, 90)[0]
    np.testing.assert_allclose(_toml("exp1")["source"]["variances"][10:], np.round(0.38 + 0.04 * u, 4))
    u = KeyedRandom(2017, "seed000-code-sds", 1, replicas=np.array([0])).uniform(0, 90)[0]
    sds = np.sqrt(_toml("published/exp1")["source"]["variances"][10:])
    np.testing.assert_allclose(sds, np.round(0.3 + 0.1 * u, 4))


def _header_value(key: str, pattern: str) -> float:
    text = (DIR / f"{key}.toml").read_text(encoding="utf-8")
    return float(re.search(pattern, text).group(1))


@pytest.mark.parametrize("key", SHIPPED)
def test_oracle_a_in_the_header_is_what_the_policies_compute(key, registry):
    config = load_config(DIR / f"{key}.toml")
    plan = build_plan(config, registry)
    source = plan.create_source()
    source.reset(np.array([0]), config.seed)
    problem = plan.problem(source, source.truth)
    patterns = {"ucbe": r"\(UCBE a = ([0-9.]+)\)", "ucbev": r"\(UCBEV a = ([0-9.]+)", "ucbev(1)": r"\(UCBEV a = ([0-9.]+)"}
    checked = 0
    for spec in plan.policies:
        if spec.label in patterns:
            policy = spec.create()
            policy.reset(problem, 1, KeyedRandom(0, "p", replicas=np.array([0])))
            assert policy.a[0] == pytest.approx(_header_value(key, patterns[spec.label]), abs=1e-4), spec.label
            checked += 1
    assert checked >= 1


# -- results files --------------------------------------------------------------------------------
def _example(generator, key):
    return {example.key: example for example in generator.examples()}[key]


@pytest.mark.parametrize("key", SHIPPED + EVIDENCE)
def test_results_file_describes_its_config(generator, key):
    example = _example(generator, key)
    results = generator.headers.read(example.results_path)
    assert results is not None, f"no results for {key}: run generate.py --run {key}"
    config = generator.headers.config_from_text(example.body())
    assert results["name"] == config.name and results["seed"] == config.seed
    run = results["run"]
    assert run["replicas"] == config.replicas == 500
    assert run["budget"] == config.problem.budget and run["checkpoints"] == config.checkpoint_list()
    assert list(run["policies"]) == [p.display_label for p in config.policies]
    for entry in run["policies"].values():
        assert len(entry["outcomes"]) == len(run["checkpoints"])
        assert all(len(column) == run["replicas"] for column in entry["outcomes"])
    assert results["check"]["budget"] < config.problem.budget


@pytest.mark.slow
@pytest.mark.parametrize("key", SHIPPED + EVIDENCE)
def test_rerunning_the_check_gives_the_recorded_results(generator, key):
    """Fails when any algorithm's behaviour on this config changed: then rerun
    ``generate.py --run KEY`` so that the results file and the header say what it does now."""
    example = _example(generator, key)
    results = generator.headers.read(example.results_path)
    config = generator.headers.config_from_text(example.body())
    assert generator.headers.differences(config, results) == []


def test_the_recorded_check_is_what_armlab_run_gives(generator, registry):
    example = _example(generator, "published/exp5")
    results = generator.headers.read(example.results_path)
    config = generator.headers.config_from_text(example.body())
    small = generator.headers.check_config(config, results["check"])
    summary = run_experiment(small, registry=registry)
    for label, entry in results["check"]["policies"].items():
        recorded = np.stack([generator.headers.decode(c) for c in entry["outcomes"]], axis=1).mean(axis=0)
        np.testing.assert_allclose(summary["policies"][label]["error_rate"], recorded)


def test_a_changed_record_is_caught(generator):
    """The check compares pulls and outcomes: a record that differs in one pull fails."""
    example = _example(generator, "published/exp3")
    results = generator.headers.read(example.results_path)
    config = generator.headers.config_from_text(example.body())
    pulls = results["check"]["policies"]["apt"]["pulls"]
    pulls[0][0] += 1
    pulls[0][1] -= 1
    assert generator.headers.differences(config, results) == ["apt: pulls per arm differ from the record"]
