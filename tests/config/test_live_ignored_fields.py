"""Live experiments refuse ``replicas`` (other than 1) and ``[sweep]`` instead of ignoring them."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from armlab import ConfigError, run_experiment
from armlab.cli import cli
from armlab.config import load_config
from armlab.orchestrator.live.session import LiveSession

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
@pytest.mark.parametrize("value", [50, 100])  # 100 is the default: written out, it was asked for
def test_live_replicas_are_refused_with_the_field_and_the_fix(live_config, command, value):
    result = CliRunner().invoke(cli, ["--no-plugins", command, live_config(replicas=f"replicas = {value}")])
    assert result.exit_code == 2, result.output
    assert f"replicas: a live experiment is one replica of real trials, so replicas = {value} would be ignored" \
        in result.output
    assert "set replicas = 1 or remove it" in result.output


@pytest.mark.parametrize("value", ["3", "100"])
def test_live_replicas_on_the_command_line_are_refused_naming_the_flag(live_config, value):
    result = CliRunner().invoke(cli, ["--no-plugins", "run", live_config(), "--replicas", value])
    assert result.exit_code == 2, result.output
    assert (f"--replicas: a live experiment is one replica of real trials, so {value} replicas would be "
            "ignored: drop --replicas") in result.output


def test_python_entry_points_refuse_an_explicit_replicas(live_config, registry, tmp_path):
    with pytest.raises(ConfigError, match="so 100 replicas would be ignored: drop the replicas argument"):
        run_experiment(live_config(), replicas=100, registry=registry)
    path = live_config(replicas="replicas = 100")  # the same file, rewritten
    for given in (path, load_config(path)):
        with pytest.raises(ConfigError, match="replicas = 100 would be ignored"):
            run_experiment(given, registry=registry)
    with pytest.raises(ConfigError, match="replicas = 100 would be ignored"):  # armlab serve CONFIG
        LiveSession.open(journal=tmp_path / "new.sqlite", config=path, registry=registry)
    assert not (tmp_path / "new.sqlite").exists()


def test_a_config_rebuilt_by_with_overrides_or_a_journal_still_runs(live_config, registry, tmp_path):
    """Both mark every field as set (they re-validate a full dump): that is not asking for replicas."""
    config = load_config(live_config()).with_overrides(seed=2)
    assert run_experiment(config, registry=registry)["policies"]["uniform"]["trials"] == 6
    journal = tmp_path / "live.sqlite"
    run_experiment(live_config(), journal=journal, registry=registry)
    session = LiveSession.open(journal=journal, registry=registry)  # armlab resume
    assert session.replayed > 0 and session.config.replicas == 100
    session.close()


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
    result = CliRunner().invoke(cli, ["--no-plugins", "run", live_config(replicas=replicas), "--replicas", "1"])
    assert result.exit_code == 0, result.output
