"""``armlab export`` and ``armlab.read_log`` (issue 33, item 2): one row per trial, and the
rows reproduce what ``/status`` says (counts and means per arm)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import armlab
from armlab.cli import cli
from armlab.config import validate_config
from armlab.decisionlog.table import COLUMNS
from armlab.extras import MissingExtra
from armlab.orchestrator.live.session import LiveSession

MEANS = np.linspace(0.1, 0.6, 10)


@pytest.fixture(scope="module")
def logged(tmp_path_factory, registry):
    """A floored UCB1 run of 600 asks: failures, abandons, a late report and pending trials."""
    path = tmp_path_factory.mktemp("log") / "j.sqlite"
    config = validate_config({
        "name": "exported", "seed": 7, "exploration_floor": 0.2, "checkpoint_every": 100,
        "problem": {"objective": "regret", "budget": 1000},
        "source": {"plugin": "external", "arms": [f"v{i}" for i in range(10)], "reward_min": 0, "reward_max": 1},
        "feedback": {"in_flight": 5},
        "policies": [{"plugin": "ucb1"}],
    })
    session = LiveSession.open(journal=path, config=config, registry=registry)
    experiment = session.experiment
    rng = np.random.default_rng(3)
    for i in range(600):
        trial = experiment.ask()
        if i % 97 == 5:
            experiment.fail(trial.id, "adapter error")
        elif i % 89 == 7:
            experiment.abandon(trial.id)
            experiment.tell(trial.id, 1.0)  # late: recorded, not counted
        else:
            experiment.tell(trial.id, float(rng.random() < MEANS[trial.arm]))
    pending = [experiment.ask().id for _ in range(3)]
    status = experiment.status()
    session.close()
    return path, status, pending


def test_the_exported_rows_reproduce_the_status_counts_and_means(logged, tmp_path):
    path, status, pending = logged
    out = tmp_path / "log.parquet"
    result = CliRunner().invoke(cli, ["--no-plugins", "export", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "603 trials" in result.output
    frame = armlab.read_log(out)
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 603
    completed = frame[frame.status == "completed"]
    counts = completed.groupby("arm").size().reindex(range(10), fill_value=0)
    means = completed.groupby("arm").reward.mean().reindex(range(10), fill_value=0.0)
    assert counts.tolist() == status["counts"]
    assert np.allclose(means.to_numpy(), status["means"], rtol=0, atol=1e-12)
    assert (frame.status == "failed").sum() == status["failed"] and (frame.status == "abandoned").sum() == status["abandoned"]
    assert frame.late_reward.notna().sum() == status["late"]
    assert sorted(frame.trial[frame.status == "pending"]) == pending
    assert frame.propensity.between(0.02 - 1e-12, 0.82 + 1e-12).all() and not frame.propensity_estimated.any()
    assert set(frame.arm_name) <= {f"v{i}" for i in range(10)} and (frame.arm_name == "v" + frame.arm.astype(str)).all()
    assert (frame.policy == "ucb1").all()
    assert frame.checkpoint.tolist()[:101] == [100] * 100 + [200]


def test_export_round_trips_through_parquet_and_csv(logged, tmp_path):
    path = logged[0]
    direct = armlab.read_log(path)
    for name in ("log.parquet", "log.csv"):
        out = tmp_path / name
        assert CliRunner().invoke(cli, ["--no-plugins", "export", str(path), "--out", str(out)]).exit_code == 0
        pd.testing.assert_frame_equal(armlab.read_log(out), direct)


def test_export_refuses_an_unknown_format_and_a_missing_log_in_one_line(logged, tmp_path):
    result = CliRunner().invoke(cli, ["--no-plugins", "export", str(logged[0]), "--out", str(tmp_path / "x.xlsx")])
    assert result.exit_code == 2 and "ending in .parquet or .csv" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["--no-plugins", "export", str(tmp_path / "none.sqlite"), "--out", "x.csv"])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = CliRunner().invoke(cli, ["--no-plugins", "export", "zz://host/db", "--experiment", "a", "--out", "x.csv"])
    assert result.exit_code == 2 and "unknown storage kind 'zz'" in result.output


def test_a_missing_log_extra_is_one_line_naming_it(monkeypatch, logged, tmp_path):
    import armlab.extras as extras

    real = extras.importlib.import_module

    def without_pyarrow(name, *args):
        if name.split(".")[0] == "pyarrow":
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(extras.importlib, "import_module", without_pyarrow)
    with pytest.raises(MissingExtra, match=r"pip install -e '\.\[log\]'"):
        armlab.read_log(tmp_path / "any.parquet")
    result = CliRunner().invoke(cli, ["--no-plugins", "export", str(logged[0]), "--out", str(tmp_path / "o.parquet")])
    assert result.exit_code == 2 and "'log' extra" in result.output
