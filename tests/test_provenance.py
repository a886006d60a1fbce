"""Provenance names the code: ``summary.json`` records the git commit armlab ran from (with
``+changes`` for a modified tree), not only the version every commit shares."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from armlab import run_experiment
from armlab.provenance import CHECKOUT, git_commit


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A git checkout with armlab's layout and one commit."""
    (tmp_path / "src" / "armlab").mkdir(parents=True)
    (tmp_path / "src" / "armlab" / "policy.py").write_text("STEP = 1\n", encoding="utf-8")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "first")
    return tmp_path


@pytest.mark.system
def test_the_commit_and_whether_src_was_modified(checkout):
    head = _git(checkout, "rev-parse", "--short=12", "HEAD")
    assert git_commit(checkout) == head
    (checkout / "notes.txt").write_text("outside src/\n", encoding="utf-8")
    assert git_commit(checkout) == head  # only the code counts
    (checkout / "src" / "armlab" / "policy.py").write_text("STEP = 2\n", encoding="utf-8")
    assert git_commit(checkout) == head + "+changes"


def test_no_commit_outside_a_checkout(tmp_path):
    (tmp_path / "src" / "armlab").mkdir(parents=True)
    assert git_commit(tmp_path) is None


@pytest.mark.system
def test_a_summary_records_the_commit_it_ran_from(make_config, registry):
    summary = run_experiment(make_config(replicas=2, problem={"objective": "best-arm", "budget": 40}),
                             registry=registry)
    recorded = summary["provenance"]["armlab_commit"]
    assert recorded == git_commit(CHECKOUT)
    if (CHECKOUT / ".git").exists():  # run from this checkout, as the tests are
        assert recorded.split("+")[0] == _git(CHECKOUT, "rev-parse", "--short=12", "HEAD")
