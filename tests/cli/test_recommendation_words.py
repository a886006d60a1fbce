"""One way to show a recommendation wherever a person reads it: the arm's name and index,
``C (arm 2)``; ``armlab run`` and ``armlab resume`` print it so."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import structlog
from click.testing import CliRunner

from armlab import LiveSession
from armlab.cli import cli
from armlab.cli.answers import describe_recommendation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"


def test_an_answer_in_words():
    assert describe_recommendation(2, [["A", "B", "C"]], several=False) == "C (arm 2)"
    assert describe_recommendation(2, [None], several=False) == "arm 2"
    assert describe_recommendation([0, 2], [["A", "B", "C"]], several=False) == "{A (arm 0), C (arm 2)}"
    assert describe_recommendation(None, [["A"]], several=False) == "none"
    assert (describe_recommendation([1, None], [["x", "y"], ["p", "q"]], several=True)
            == "bandit 0: y (arm 1); bandit 1: none")


def _told(journal: Path, config: str, registry, reward) -> None:
    """A journaled external experiment with 30 trials told, each ``reward(trial)``."""
    session = LiveSession.open(journal=journal, config=config, registry=registry)
    for _ in range(30):
        trial = session.experiment.ask()
        session.experiment.tell(trial.id, reward(trial))
    session.close()


def _resumed(journal: Path, tmp_path: Path) -> str:
    result = CliRunner().invoke(cli, ["--no-plugins", "resume", str(journal), "--log", str(tmp_path / "log.jsonl")])
    structlog.reset_defaults()  # the command configured logging into a file it has closed
    assert result.exit_code == 0, result.output
    return result.stdout


def test_resume_names_the_recommended_arm(tmp_path, registry):
    config = tmp_path / "ab.toml"
    shutil.copy(EXAMPLES / "ab_service.toml", config)
    _told(tmp_path / "ab.sqlite", str(config), registry, lambda trial: 1.0 if trial.arm == 2 else 0.0)
    assert re.search(r"; recommendation C \(arm 2\)$", _resumed(tmp_path / "ab.sqlite", tmp_path), re.M)


def test_resume_names_each_bandits_recommended_arm(tmp_path, registry):
    config = tmp_path / "three.toml"
    shutil.copy(EXAMPLES / "three_ab_tests.toml", config)
    _told(tmp_path / "three.sqlite", str(config), registry, lambda trial: 1.0 if trial.arm == 1 else 0.0)
    line = _resumed(tmp_path / "three.sqlite", tmp_path)
    assert re.search(r"; recommendation bandit 0: (\S+) \(arm \d\); bandit 1: .+; bandit 2: .+$", line, re.M), line
