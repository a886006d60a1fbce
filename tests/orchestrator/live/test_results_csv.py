"""``results.csv`` of a live run: one row per checkpoint x arm (x bandit), with the values the
run had at that checkpoint (not its final totals repeated)."""

from __future__ import annotations

import csv
from itertools import groupby

import pytest

from armlab import run_experiment
from armlab.config import validate_config

#: Arm ``a`` answers ``(a + 1) / 10`` (plus ``bandit / 100``); trial 1 fails.
ANSWERS = (
    "def reward(trial):\n"
    "    if trial.id == 1:\n"
    "        raise RuntimeError('plate reader jammed')\n"
    "    return (trial.arm + 1) / 10 + trial.bandit / 100\n"
)
SOURCE = {"plugin": "callback", "function": "live_answers_b23:reward", "reward_min": 0, "reward_max": 1}


@pytest.fixture
def answers(tmp_path, monkeypatch):
    (tmp_path / "live_answers_b23.py").write_text(ANSWERS)
    monkeypatch.syspath_prepend(str(tmp_path))


def _rows(path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _check_checkpoint(rows: list[dict[str, str]], trials: int) -> None:
    """In-flight 1: every dispatched trial has ended at a checkpoint; trial 1 failed."""
    assert sum(int(r["pulls"]) for r in rows) == trials  # trials sent to the arms so far
    observed = sum(int(r["observed"]) for r in rows)
    assert {(r["completed"], r["failed"]) for r in rows} == {(str(observed), "1")} and observed == trials - 1
    for row in rows:
        if int(row["observed"]) == 0:
            assert row["mean"] == ""
        else:
            bandit = int(row.get("bandit") or 0)
            assert float(row["mean"]) == pytest.approx((int(row["arm"]) + 1) / 10 + bandit / 100)


def test_a_live_run_writes_one_row_per_checkpoint_and_arm(tmp_path, answers, registry):
    config = validate_config({
        "name": "lv", "seed": 3, "checkpoint_every": 4,
        "problem": {"objective": "best-arm", "budget": 12},
        "source": {**SOURCE, "arms": ["A", "B", "C"]},
        "feedback": {"in_flight": 1},
        "policies": [{"plugin": "ucb1"}],
    })
    run_experiment(config, out_dir=tmp_path / "out", registry=registry)
    rows = _rows(tmp_path / "out" / "results.csv")
    assert [(r["checkpoint"], r["arm"], r["arm_name"]) for r in rows] == [
        (str(c), str(a), name) for c in (4, 8, 12) for a, name in enumerate("ABC")
    ]
    assert "bandit" not in rows[0] and rows[0]["policy"] == "ucb1" and rows[0]["replicas"] == "1"
    for trials, group in groupby(rows, key=lambda r: int(r["checkpoint"])):
        group = list(group)
        _check_checkpoint(group, trials)
        assert [r["recommended"] for r in group].count("True") == 1
    first, last = rows[:3], rows[-3:]
    assert [r["pulls"] for r in first] != [r["pulls"] for r in last]  # the values then, not the totals
    assert rows[-1]["completed"] == "11"


def test_a_multi_bandit_live_run_has_a_bandit_column(tmp_path, answers, registry):
    config = validate_config({
        "name": "two", "seed": 5, "checkpoint_every": 10,
        "problem": {"objective": "best-arm", "budget": 30},
        "bandits": [{"label": "left", "source": {**SOURCE, "arms": ["x", "y"]}},
                    {"label": "right", "source": {**SOURCE, "arms": ["p", "q", "r"]}}],
        "allocator": {"plugin": "gcp-bayes", "warmup_per_arm": 2},
        "feedback": {"in_flight": 1},
        "policies": [{"plugin": "bayes-topm", "warmup_per_arm": 2}],
    })
    run_experiment(config, out_dir=tmp_path / "out", registry=registry)
    rows = _rows(tmp_path / "out" / "results.csv")
    places = [("0", "left", "0", "x"), ("0", "left", "1", "y"),
              ("1", "right", "0", "p"), ("1", "right", "1", "q"), ("1", "right", "2", "r")]
    assert [(r["checkpoint"], r["bandit"], r["bandit_label"], r["arm"], r["arm_name"]) for r in rows] == [
        (str(c), *place) for c in (10, 20, 30) for place in places
    ]
    for trials, group in groupby(rows, key=lambda r: int(r["checkpoint"])):
        group = list(group)
        _check_checkpoint(group, trials)
        for _, arms in groupby(group, key=lambda r: r["bandit"]):
            assert [r["recommended"] for r in arms].count("True") == 1
