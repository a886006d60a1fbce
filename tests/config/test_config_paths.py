"""Paths and ``module:function`` references in a config resolve against the config file's
directory, so an experiment runs the same from any working directory (and when resumed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.config import ExperimentConfig, load_config
from armlab.orchestrator.journal.store import Journal
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.montecarlo.scale.portable import rebuild, recipe
from armlab.plan import build_plan

ARMLAB = Path(sys.executable).parent / "armlab"
ML100K = Path(__file__).resolve().parents[3] / "shared" / "data" / "ml-100k" / "u.data"

REWARD = "def reward(trial):\n    return float(trial.arm == 1)\n"
PROGRAM = f"#!{sys.executable}\nimport os\nprint(float(os.environ['ARMLAB_ARM'] == '1'))\n"
LIVE = """
name = "next-to-the-config"
seed = 1
replicas = 1

[problem]
objective = "best-arm"
budget = 8

[[policies]]
plugin = "uniform"

[source]
arms = 2
reward_min = 0
reward_max = 1
"""


def live_config(folder: Path, source: str) -> Path:
    """``folder/exp.toml``: a live experiment of 8 trials whose ``[source]`` adds ``source``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "exp.toml"
    path.write_text(LIVE + textwrap.dedent(source), encoding="utf-8")
    return path


def program_config(folder: Path, name: str = "answer.py") -> Path:
    """A ``command`` experiment whose program ``./answer.py`` sits next to the config."""
    program = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    program.write_text(PROGRAM, encoding="utf-8")
    program.chmod(0o755)
    return live_config(folder, f'plugin = "command"\ncommand = ["./{name}"]\n')


def invoke(*args: str):
    return CliRunner().invoke(cli, ["--no-plugins", *args])


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """A working directory that is not the config's (nor at its depth, so that no relative
    path of the config names an existing file from here)."""
    other = tmp_path / "elsewhere" / "deeper"
    other.mkdir(parents=True)
    monkeypatch.chdir(other)
    return other


@pytest.mark.parametrize("extra", [[], ["--workers", "2"]], ids=["one-process", "workers"])
@pytest.mark.system
def test_a_callback_module_next_to_the_config_is_imported_from_any_directory(tmp_path, elsewhere, extra):
    folder = tmp_path / "experiment"
    config = live_config(folder, 'plugin = "callback"\nfunction = "next_to_config_reward:reward"\n')
    (folder / "next_to_config_reward.py").write_text(REWARD, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(ARMLAB), "--no-plugins", "run", str(config), *extra], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "uniform" in done.stdout and "8" in done.stdout


def test_an_unimportable_callback_says_where_it_looked(tmp_path, elsewhere):
    config = live_config(tmp_path / "experiment", 'plugin = "callback"\nfunction = "no_such_module_b28:reward"\n')
    result = invoke("validate", str(config))
    assert result.exit_code == 2
    assert "no_such_module_b28" in result.output and str(tmp_path / "experiment") in result.output


@pytest.mark.system
def test_a_command_program_next_to_the_config_runs_from_any_directory(tmp_path, elsewhere):
    result = invoke("run", str(program_config(tmp_path / "experiment")))
    assert result.exit_code == 0, result.output
    assert "completed" in result.output


def test_a_bare_program_name_is_looked_up_on_path(tmp_path, registry, elsewhere):
    config = load_config(live_config(tmp_path / "experiment", 'plugin = "command"\ncommand = ["echo", "1"]\n'))
    assert build_plan(config, registry).source_params.command == ["echo", "1"]


def test_a_command_cwd_resolves_against_the_config(tmp_path, registry, elsewhere):
    folder = tmp_path / "experiment"
    (folder / "work").mkdir(parents=True)
    config = load_config(live_config(folder, 'plugin = "command"\ncommand = ["pwd"]\ncwd = "work"\n'))
    assert build_plan(config, registry).source_params.cwd == str(folder / "work")


def test_a_missing_program_names_the_field_the_resolved_path_and_the_base(tmp_path, elsewhere):
    folder = tmp_path / "experiment"
    result = invoke("validate", str(live_config(folder, 'plugin = "command"\ncommand = ["./gone.py"]\n')))
    assert result.exit_code == 2
    assert "source.command" in result.output and str(folder / "gone.py") in result.output
    assert "config file's directory" in result.output and str(folder) in result.output


@pytest.mark.system
def test_a_config_from_python_resolves_against_the_current_directory(tmp_path, registry, monkeypatch):
    folder = tmp_path / "experiment"
    config = load_config(program_config(folder)).model_dump(mode="python")
    monkeypatch.chdir(folder)
    summary = run_experiment(config, registry=registry)
    assert summary["policies"]["uniform"]["completed"] == 8


@pytest.mark.parametrize("from_file", [True, False], ids=["config-file", "python-config"])
def test_a_worker_rebuilds_the_plan_with_the_paths_this_process_resolved(tmp_path, registry, monkeypatch, from_file):
    folder = tmp_path / "experiment"
    config = load_config(program_config(folder))
    if not from_file:  # a config built in Python resolves against the directory it was built in
        monkeypatch.chdir(folder)
        config = ExperimentConfig.model_validate(config.model_dump(mode="python"))
    plan_recipe = recipe(build_plan(config, registry))
    monkeypatch.chdir(tmp_path)  # a worker elsewhere (a Dask worker; spawned ones share the cwd)
    assert rebuild(plan_recipe).source_params.command == [str(folder / "answer.py")]


@pytest.mark.system
def test_a_resumed_run_resolves_paths_as_the_original_did(tmp_path, registry, monkeypatch):
    folder = tmp_path / "experiment"
    config = program_config(folder)
    journal = tmp_path / "run.sqlite"
    LiveSession.open(journal=journal, config=config, registry=registry).close()  # started, not run
    monkeypatch.chdir(tmp_path)
    result = invoke("resume", str(journal))
    assert result.exit_code == 0, result.output
    session = LiveSession.open(journal=journal, registry=registry)
    assert session.experiment.counters.completed == 8
    session.close()


def test_a_journal_without_a_base_directory_resolves_against_the_current_one(tmp_path, registry, monkeypatch):
    """Journals written before the base directory was recorded keep opening, as they did."""
    folder = tmp_path / "experiment"
    config = load_config(program_config(folder))
    Journal.create(tmp_path / "old.sqlite", {"config": config.model_dump(mode="json"), "seed": 1}).close()
    monkeypatch.chdir(folder)
    session = LiveSession.open(journal=tmp_path / "old.sqlite", registry=registry)
    assert session.plan.source_params.command == [str(folder / "answer.py")]
    session.close()


MOVIELENS = """
name = "movielens-next-to-the-config"
seed = 5
replicas = 4

[problem]
objective = "best-arm"
budget = 200

[source]
plugin = "movielens"
ratings = "../data/u.data"
cache_dir = "cache"
n_arms = 4

[[policies]]
plugin = "uniform"

[[policies]]
plugin = "sh"
"""


@pytest.fixture
def movielens_config(tmp_path) -> Path:
    if not ML100K.is_file():
        pytest.skip(f"MovieLens 100K ratings not found at {ML100K}")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "u.data").symlink_to(ML100K)
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "exp.toml").write_text(MOVIELENS, encoding="utf-8")
    return folder / "exp.toml"


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.system
def test_movielens_ratings_resolve_against_the_config(movielens_config, elsewhere, workers):
    result = invoke("run", str(movielens_config), "--workers", workers)
    assert result.exit_code == 0, result.output
    assert "sh" in result.output and any((movielens_config.parent / "cache").iterdir())


def test_a_missing_ratings_file_names_the_field_the_resolved_path_and_the_base(tmp_path, elsewhere):
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "exp.toml").write_text(MOVIELENS, encoding="utf-8")
    result = invoke("validate", str(folder / "exp.toml"))
    assert result.exit_code == 2
    assert "source.ratings" in result.output and str(tmp_path / "data" / "u.data") in result.output
    assert str(folder) in result.output
