"""``armlab run --journal`` / ``run_experiment(journal=...)``: a durable, resumable live run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.errors import ConfigError
from armlab.orchestrator.live.session import LiveSession

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "quickstart.toml"
ANSWERS = textwrap.dedent("""
    import hashlib

    def assay(trial):
        digest = hashlib.sha256(f"{trial.arm}/{trial.pull}".encode()).digest()
        u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
        return float(u < (0.2, 0.5, 0.8)[trial.arm])
""")


@pytest.fixture
def config(live, tmp_path, monkeypatch):
    (tmp_path / "journal_answers.py").write_text(ANSWERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return live.config(
        source={"plugin": "callback", "function": "journal_answers:assay", "arms": 3, "reward_min": 0, "reward_max": 1},
        problem={"objective": "best-arm", "budget": 24},
    )


def test_a_journaled_run_records_every_trial_and_a_second_run_resumes_it(config, registry, tmp_path):
    path = tmp_path / "run.sqlite"
    first = run_experiment(config, registry=registry, journal=path)["policies"]["thompson"]
    assert first["trials"] == 24 and sum(first["counts"]) == 24
    session = LiveSession.open(journal=path, registry=registry)
    assert session.replayed == 48 and session.experiment.counters.completed == 24  # ask + tell per trial
    session.close()
    again = run_experiment(config, registry=registry, journal=path)["policies"]["thompson"]
    assert again == first  # replayed, nothing run twice


def test_a_journal_belongs_to_one_experiment(config, registry, tmp_path):
    path = tmp_path / "run.sqlite"
    run_experiment(config, registry=registry, journal=path)
    with pytest.raises(ConfigError, match=r"different experiment \(changed: seed\)"):
        run_experiment(config, seed=99, registry=registry, journal=path)


def test_a_simulated_run_refuses_a_journal(tmp_path):
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(QUICKSTART), "--replicas", "5",
                                      "--journal", str(tmp_path / "j.sqlite")])
    assert result.exit_code == 2 and "source 'gaussian' is simulated" in result.output
    assert "drop --journal" in result.output and not (tmp_path / "j.sqlite").exists()
