"""Experiment files a newcomer gets wrong: each mistake is refused by ``armlab validate`` (and
``armlab run``) before anything runs, in one line that names the field and the fix."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.config import validate_config
from armlab.errors import ConfigError
from armlab.memory_estimate import check_memory
from armlab.plan import build_plans
from armlab.plugins.interfaces import PluginParams

GOOD = """\
name = "inputs"
seed = 1
replicas = 5
checkpoints = [50, 100]

[problem]
objective = "best-arm"
budget = 100

[source]
plugin = "gaussian"
means = [0.5, 0.45, 0.4, 0.3]
variances = 0.25

[[policies]]
plugin = "sh"

[[policies]]
plugin = "ucb1"
"""
NO_CHECKPOINTS = GOOD.replace("checkpoints = [50, 100]\n", "")  # for budget sweeps


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _validate(tmp_path: Path, text: str, *options: str):
    return CliRunner().invoke(cli, ["--no-plugins", "validate", str(_write(tmp_path, text)), *options])


def _refused(tmp_path: Path, text: str) -> str:
    """``armlab validate`` refuses ``text`` cleanly; return its error output."""
    result = _validate(tmp_path, text)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.stderr


def _change(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def test_the_base_config_is_valid(tmp_path):
    result = _validate(tmp_path, GOOD)
    assert result.exit_code == 0, result.output


# -- B8: only finite numbers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (("means = [0.5, 0.45, 0.4, 0.3]", "means = [nan, 0.45, 0.4, 0.3]"),
         "source.means[0]: Input should be a finite number"),
        (("means = [0.5, 0.45, 0.4, 0.3]", "means = [0.5, inf, 0.4, 0.3]"),
         "source.means[1]: Input should be a finite number"),
        (("variances = 0.25", "variances = inf"),
         "source.variances: Input should be a valid list or Input should be a finite number"),
        (('plugin = "ucb1"', 'plugin = "ucb1"\nexploration = inf'),
         "policies[1].exploration: Input should be a finite number"),
        (("budget = 100", "budget = 100\nepsilon = inf"), "problem.epsilon: Input should be a finite number"),
        (("budget = 100", "budget = 100\nthreshold = nan"), "problem.threshold: Input should be a finite number"),
        (('plugin = "ucb1"', 'plugin = "ucb1"\n[feedback]\ntimeout = inf'),
         "feedback.timeout: Input should be a finite number"),
    ],
)
def test_nan_and_inf_are_refused_wherever_a_number_is_read(tmp_path, change, line):
    assert line in _refused(tmp_path, _change(*change))


def test_every_plugin_parameter_model_refuses_non_finite_numbers(registry):
    assert PluginParams.model_config.get("allow_inf_nan") is False
    for info in registry.infos():
        assert info.cls.Params.model_config.get("allow_inf_nan") is False, info.name


# -- B9: every sweep value is validated as a run builds it --------------------------------------


def test_validate_refuses_a_sweep_of_a_field_that_does_not_exist(tmp_path):
    text = NO_CHECKPOINTS + '[sweep]\nparameter = "problem.budgit"\nvalues = [100, 200]\n'
    assert "sweep.parameter: 'problem.budgit' is not a field of [problem]" in _refused(tmp_path, text)
    assert "did you mean 'budget'?" in _refused(tmp_path, text)


def test_validate_builds_the_plan_of_every_sweep_value(tmp_path):
    text = GOOD + '[sweep]\nparameter = "source.means"\nvalues = [0.5, 0.6]\n'
    assert ("sweep values source.means = 0.5, 0.6 give an invalid experiment: "
            "source.means: Input should be a valid list") in _refused(tmp_path, text)
    text = NO_CHECKPOINTS + '[sweep]\nparameter = "problem.budget"\nvalues = [100, 5, 7]\n'
    errors = _refused(tmp_path, text)
    assert "sweep value problem.budget = 5 gives an invalid experiment: policies[0] (sh): sh: budget 5" in errors
    assert "sweep value problem.budget = 7 gives an invalid experiment: policies[0] (sh): sh: budget 7" in errors


# -- B10: seeds are 64-bit words ---------------------------------------------------------------


def test_a_seed_of_64_bits_or_more_is_refused(tmp_path):
    errors = _refused(tmp_path, _change("seed = 1", f"seed = {2**64}"))
    assert f"seed: seed must lie in 0 .. 2**64 - 1 ({2**64 - 1}), not {2**64}" in errors
    assert _validate(tmp_path, _change("seed = 1", f"seed = {2**64 - 1}")).exit_code == 0
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(_write(tmp_path, GOOD)), "--seed", str(2**64)])
    assert result.exit_code == 2 and "seed must lie in 0 .. 2**64 - 1" in result.stderr, result.output
    assert "experiment_started" not in result.stderr


# -- B11: memory is estimated before the run ----------------------------------------------------


def test_replicas_that_cannot_fit_in_memory_are_refused_with_the_estimate(tmp_path):
    text = _change("replicas = 5", "replicas = 1000000000")
    errors = _refused(tmp_path, text)
    assert re.search(r"replicas: 1000000000 replicas need about [\d.]+ TB of memory \(4 arms x about 240 bytes", errors)
    assert "lower replicas (--replicas; about" in errors
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(_write(tmp_path, text))])
    assert result.exit_code == 2 and "of memory" in result.stderr and "experiment_started" not in result.stderr


def test_the_memory_check_counts_blocks_and_workers(registry):
    config = validate_config({
        "replicas": 1000, "checkpoints": [50, 100], "problem": {"objective": "best-arm", "budget": 100},
        "source": {"plugin": "gaussian", "means": [0.5] + [0.4] * 15},
        "policies": [{"plugin": "uniform"}, {"plugin": "ucb1"}, {"plugin": "sh"}],
    })
    plans = [plan for _, plan in build_plans(config, registry)]
    assert plans[0].arm_counts == (16,)
    limit = 10**6  # results: 3 x 1000 x (2 x 2 + 1) x 8 bytes; one replica of 16 arms: about 4 kB
    with pytest.raises(ConfigError, match=r"1000 replicas need about 4\.0 MB of memory") as refused:
        check_memory(plans, available=limit)
    block = int(re.search(r"or simulate blocks of at most (\d+) replicas \(--shard-size; --workers runs that "
                          r"many blocks side by side\)", str(refused.value)).group(1))
    assert 100 < block < 1000
    check_memory(plans, block=block, available=limit)
    with pytest.raises(ConfigError, match="of memory"):
        check_memory(plans, block=block, workers=3, available=limit)
    check_memory(plans, remote=True, available=limit)  # a Dask cluster elsewhere holds the blocks


# -- B15: delays longer than the budget --------------------------------------------------------


def test_a_delay_longer_than_the_budget_is_refused(tmp_path):
    text = GOOD + "[feedback]\ndelay = 100000\n"
    assert ("feedback.delay: a delay of 100000 steps is longer than the budget (100 trials): its results "
            "would arrive only after the last trial is dispatched, when no policy can use them; "
            "use delay <= 100") in _refused(tmp_path, text)
    text = GOOD + '[feedback]\ndelay_model = "uniform"\ndelay_max = 101\n'
    assert "feedback.delay_max: a delay of 101 steps is longer than the budget (100 trials)" in _refused(tmp_path, text)
    assert _validate(tmp_path, GOOD + "[feedback]\ndelay = 100\n").exit_code == 0


# -- B24: one way to write a path, both passes in one report, misplaced keys ---------------------


def test_schema_paths_use_brackets_like_plugin_paths(tmp_path):
    errors = _refused(tmp_path, _change('plugin = "ucb1"', 'plugin = "ucb1"\nlabel = 5'))
    assert "policies[1].label: Input should be a valid string" in errors
    assert "policies.1" not in errors


def test_schema_and_plugin_mistakes_are_reported_together(tmp_path):
    text = _change("budget = 100", "budgt = 100").replace('plugin = "gaussian"', 'plugin = "gausian"')
    errors = _refused(tmp_path, text.replace('plugin = "ucb1"', 'plugin = "ucb1"\nexploraton = 2'))
    assert "problem.budgt: unknown field; remove it or check its spelling; did you mean 'budget'?" in errors
    assert "source.plugin: unknown source plugin 'gausian'" in errors and "did you mean 'gaussian'?" in errors
    assert ("policies[1].exploraton: unknown field; remove it or check its spelling; "
            "did you mean 'exploration'?") in errors


def test_a_policies_list_written_inside_a_table_is_explained(tmp_path):
    text = textwrap.dedent("""\
        [problem]
        objective = "regret"
        budget = 20
        [source]
        plugin = "bernoulli"
        means = [0.1, 0.2]
        policies = [{plugin = "ucb1"}]
        """)
    errors = _refused(tmp_path, text)
    assert ("policies: required field is missing; `policies = ...` sits inside [source] (in TOML a key "
            "written below a [table] header belongs to that table): move it above the first [table] header") in errors


def test_a_misspelled_plugin_name_gets_a_suggestion(tmp_path):
    errors = _refused(tmp_path, _change('plugin = "ucb1"', 'plugin = "unifrom"'))
    assert re.search(r"policies\[1\]\.plugin: unknown policy plugin 'unifrom'; available: .*; did you mean 'uniform'\?",
                     errors)


# -- B25: an oracle default on a live source names its parameter --------------------------------


LIVE = """\
replicas = 1
[problem]
objective = "threshold"
threshold = 0.5
budget = 40
[source]
plugin = "external"
arms = 3
reward_min = 0
reward_max = 1
[[policies]]
plugin = "ucbe"
"""


def test_an_oracle_default_on_a_live_source_names_the_parameter_to_set(tmp_path):
    errors = _refused(tmp_path, LIVE)
    assert ("policy 'ucbe' needs the source's true means, but source 'external' does not know them "
            "(live sources never do). Set a in the policy's table") in errors
    assert _validate(tmp_path, LIVE.replace('plugin = "ucbe"', 'plugin = "ucbe"\na = 1.0')).exit_code == 0
