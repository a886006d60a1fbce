"""Live experiments refuse ``replicas`` (other than 1) and ``[sweep]`` instead of ignoring them."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from armlab import ConfigError, run_experiment
from armlab.cli import cli

LIVE = """\
name = "live-fields"
seed = 1
{replicas}
[problem]
objective = "best-arm"
budget = 6
[source]
plugin = "callback"
function = "lf_answers:one"
arms = 2
reward_min = 0
reward_max = 1
[[policies]]
plugin = "uniform"
{sweep}
"""


@pytest.fixture
def live_config(tmp_path, monkeypatch):
    """``live_config(replicas=..., sweep=...)``: the path of a live experiment file."""
    (tmp_path / "lf_answers.py").write_text("def one(trial):\n    return 1.0\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(replicas: str = "", sweep: str = "") -> str:
        path = tmp_path / "live.toml"
        path.write_text(LIVE.format(replicas=replicas, sweep=sweep), encoding="utf-8")
        return str(path)

    return write


@pytest.mark.parametrize("command", ["run", "validate"])
def test_live_replicas_are_refused_with_the_field_and_the_fix(live_config, command):
    result = CliRunner().invoke(cli, ["--no-plugins", command, live_config(replicas="replicas = 50")])
    assert result.exit_code == 2, result.output
    assert "replicas: a live experiment is one replica" in result.output
    assert "set replicas = 1 or remove it" in result.output


def test_live_replicas_on_the_command_line_are_refused(live_config):
    result = CliRunner().invoke(cli, ["--no-plugins", "run", live_config(), "--replicas", "3"])
    assert result.exit_code == 2 and "replicas = 3 would be ignored" in result.output


def test_a_live_sweep_is_refused(live_config, registry):
    path = live_config(sweep='[sweep]\nparameter = "problem.budget"\nvalues = [4, 8]')
    with pytest.raises(ConfigError, match=r"sweep: a live experiment .* remove the \[sweep\] table"):
        run_experiment(path, registry=registry)
    result = CliRunner().invoke(cli, ["--no-plugins", "run", path])
    assert result.exit_code == 2 and "remove the [sweep] table" in result.output


@pytest.mark.parametrize("replicas", ["", "replicas = 1"])
def test_one_replica_or_the_default_runs(live_config, registry, replicas):
    summary = run_experiment(live_config(replicas=replicas), registry=registry)
    assert summary["replicas"] == 1 and summary["policies"]["uniform"]["trials"] == 6
