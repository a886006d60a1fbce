"""``armlab.run_experiment`` from a notebook: inside a running event loop, from a dict, with
a result that is still the summary dict and turns into the tidy table of results.csv."""

from __future__ import annotations

import asyncio
import csv
import json
import types

import pytest

import armlab
from armlab import ExperimentResult, run_experiment

EXPERIMENT = {
    "name": "notebook",
    "seed": 5,
    "replicas": 12,
    "checkpoint_every": 50,
    "problem": {"objective": "regret", "budget": 100},
    "source": {"plugin": "bernoulli", "means": [0.6, 0.5, 0.4]},
    "policies": [{"plugin": "ucb1"}, {"plugin": "uniform"}],
}


def test_a_simulated_dict_config_runs_inside_a_running_event_loop(registry, tmp_path):
    async def cell() -> ExperimentResult:  # what a notebook cell is: code inside a running loop
        return run_experiment(EXPERIMENT, registry=registry, out_dir=tmp_path)

    result = asyncio.run(cell())
    assert isinstance(result, dict) and isinstance(result, ExperimentResult)
    assert set(result["policies"]) == {"ucb1", "uniform"}
    written = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(result)) == written  # the raw dict callers used before


def test_a_live_run_inside_a_running_loop_names_the_async_form(registry, tmp_path, monkeypatch):
    (tmp_path / "nb_answers.py").write_text("def one(trial):\n    return 1.0\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    live = {**EXPERIMENT, "replicas": 1, "problem": {"objective": "best-arm", "budget": 6},
            "source": {"plugin": "callback", "function": "nb_answers:one", "arms": 2, "reward_min": 0,
                       "reward_max": 1}, "policies": [{"plugin": "uniform"}]}

    async def cell() -> None:
        run_experiment(live, registry=registry)

    with pytest.raises(RuntimeError, match=r"await armlab\.run_experiment_async\(\.\.\.\)"):
        asyncio.run(cell())

    async def async_cell() -> ExperimentResult:
        return await armlab.run_experiment_async(live, registry=registry)

    assert asyncio.run(async_cell())["policies"]["uniform"]["trials"] == 6  # the form it names works


def test_to_pandas_builds_the_table_of_results_csv(registry, tmp_path, monkeypatch):
    built = {}

    def data_frame(rows, columns):  # stands in for pandas.DataFrame (pandas is optional)
        built.update(rows=rows, columns=columns)
        return "frame"

    monkeypatch.setitem(__import__("sys").modules, "pandas", types.SimpleNamespace(DataFrame=data_frame))
    result = run_experiment({**EXPERIMENT, "sweep": {"parameter": "problem.budget", "values": [50, 100]}}, registry=registry,
                            out_dir=tmp_path)
    assert result.to_pandas() == "frame"
    with (tmp_path / "results.csv").open(encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    assert built["columns"] == table[0]
    assert len(built["rows"]) == len(table) - 1 == 2 * (1 + 2)  # policies x checkpoints (50; 50 and 100)
    first = dict(zip(table[0], table[1], strict=True))
    assert {key: str(value) for key, value in built["rows"][0].items()} == {k: v for k, v in first.items() if v}


def test_to_pandas_without_pandas_says_how_to_install_it(registry, monkeypatch):
    result = run_experiment(EXPERIMENT, registry=registry)
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # import pandas now fails
    with pytest.raises(ImportError, match=r"pip install pandas"):
        result.to_pandas()
