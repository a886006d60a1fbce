"""Experiment files: every mistake named with its field and fix, via the API and the CLI."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.config import load_config
from armlab.errors import ConfigError
from armlab.plan import build_plan

GOOD = """
name = "demo"
seed = 1
replicas = 5
checkpoints = [50, 100]

[problem]
objective = "best-arm"
budget = 100

[source]
plugin = "gaussian"
means = [0.5, 0.45, 0.4, 0.3]
variances = [0.25, 0.25, 0.25, 0.25]

[[policies]]
plugin = "sh"

[[policies]]
plugin = "uniform"
label = "unif"
"""


def write(tmp_path, text):
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def invalid(tmp_path, registry, text):
    """Both the API and `armlab validate` must refuse ``text``; return the CLI output."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError):
        build_plan(load_config(path), registry)
    result = CliRunner().invoke(cli, ["--no-plugins", "validate", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


def test_good_config_validates(tmp_path, registry):
    result = CliRunner().invoke(cli, ["--no-plugins", "validate", str(write(tmp_path, GOOD))])
    assert result.exit_code == 0, result.output
    assert "OK" in result.output and "sh, unif" in result.output


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('plugin = "sh"', 'plugin = "shh"'), r"policies\[0\]\.plugin: unknown policy plugin 'shh'; available: .*sh"),
        (('label = "unif"', 'label = "unif"\nepsilon = 0.1'), r"policies\[1\]\.epsilon: unknown field.*uniform accepts"),
        (("budget = 100", "budget = -5"), r"problem\.budget: Input should be greater than 0"),
        (("variances = [0.25, 0.25, 0.25, 0.25]", "variances = [0.25, 0.25]"),
         r"source: variances has 2 entries but means has 4"),
        (('objective = "best-arm"', 'objective = "top-m"'), r"needs m"),
        (('objective = "best-arm"', 'objective = "fastest"'), r"problem\.objective: Input should be"),
        (("checkpoints = [50, 100]", "checkpoints = [50, 500]"), r"checkpoints must lie in 1\.\.budget"),
        (('label = "unif"', 'label = "sh"'), r"two policies share the label 'sh'"),
        (('plugin = "gaussian"', 'plugin = "gausian"'), r"source\.plugin: unknown source plugin 'gausian'"),
        (("budget = 100", "budget = 100\nm = 9\n"), r"m = 9 must be smaller than the number of arms"),
        (("replicas = 5", "replicas = 0"), r"replicas: Input should be greater than or equal to 1"),
        (("checkpoints = [50, 100]\n", "checkpoint_every = 0\n"), r"checkpoint_every: Input should be greater than 0"),
    ],
)
def test_mistakes_are_explained(tmp_path, registry, change, expected):
    old, new = change
    assert old in GOOD
    assert re.search(expected, invalid(tmp_path, registry, GOOD.replace(old, new)))


def test_budget_too_small_for_a_policy_is_caught_before_running(tmp_path, registry):
    text = GOOD.replace("checkpoints = [50, 100]\n", "").replace("budget = 100", "budget = 6")
    assert re.search(r"policies\[0\] \(sh\): sh: budget 6 is too small", invalid(tmp_path, registry, text))


def test_thompson_on_gaussian_rewards_is_refused(tmp_path, registry):
    text = GOOD.replace('plugin = "sh"', 'plugin = "thompson"')
    assert "needs rewards in [0, 1]" in invalid(tmp_path, registry, text)


def test_objective_not_served_is_refused(tmp_path, registry):
    text = GOOD.replace('objective = "best-arm"', 'objective = "regret"')
    assert "'sh' does not serve objective 'regret'" in invalid(tmp_path, registry, text)


def test_unreadable_and_malformed_files(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(cli, ["--no-plugins", "run", str(tmp_path / "nope.toml")])
    assert missing.exit_code == 2 and "cannot read experiment file" in missing.output
    bad = write(tmp_path, "name = [unclosed")
    result = runner.invoke(cli, ["--no-plugins", "validate", str(bad)])
    assert result.exit_code == 2 and "not valid TOML" in result.output


def test_sweep_variants_are_validated_up_front(tmp_path, registry):
    text = GOOD.replace("checkpoints = [50, 100]\n", "") + '\n[sweep]\nparameter = "problem.budget"\nvalues = [100, 0]\n'
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"problem\.budget = 0 gives an invalid experiment"):
        load_config(path).variants()


def test_plugin_params_show_up_in_the_summary(tmp_path):
    text = GOOD.replace('plugin = "sh"', 'plugin = "ucb1"\nexploration = 0.5')
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(write(tmp_path, text)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policies"]["ucb1"]["params"] == {"exploration": 0.5, "tie_break": "lowest"}
