"""Shards merge deterministically: any shard size, worker count or executor, same numbers."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.config import validate_config
from armlab.orchestrator.shards import ShardRunner, split_replicas

EXPERIMENT = {
    "name": "shards", "seed": 9, "replicas": 23, "checkpoints": [60, 120],
    "problem": {"objective": "best-arm", "budget": 120},
    "source": {"plugin": "gaussian", "means": [0.5, 0.45, 0.4, 0.3, 0.2], "variances": 0.5},
    "feedback": {"delay": 2},
    "policies": [{"plugin": "ucb1", "tie_break": "random"}, {"plugin": "sh"}],
}


def metrics(summary):
    return {label: (p["error_rate"], p["error_stderr"]) for label, p in summary["policies"].items()}


def test_split_replicas_covers_every_replica_once():
    assert split_replicas(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert split_replicas(3, 5) == [(0, 3)]


@pytest.mark.parametrize(("workers", "shard_size"), [(1, 5), (2, 4), (3, None)])
def test_local_shards_match_one_batch(workers, shard_size):
    config = validate_config(EXPERIMENT)
    whole = run_experiment(config)
    sharded = run_experiment(config, scale=ShardRunner(workers=workers, shard_size=shard_size))
    assert metrics(sharded) == metrics(whole)


def test_sweeps_fan_out_with_their_shards():
    data = copy.deepcopy(EXPERIMENT)
    del data["checkpoints"]
    data["sweep"] = {"parameter": "problem.budget", "values": [60, 120]}
    config = validate_config(data)
    whole = run_experiment(config)
    sharded = run_experiment(config, scale=ShardRunner(workers=2, shard_size=6))
    assert metrics(sharded) == metrics(whole)
    assert [metrics(r) for r in sharded["runs"]] == [metrics(r) for r in whole["runs"]]


def test_dask_executor_matches_one_batch():
    pytest.importorskip("dask.distributed")
    config = validate_config(EXPERIMENT)
    whole = run_experiment(config)
    on_dask = run_experiment(config, scale=ShardRunner(workers=2, executor="dask", shard_size=8))
    assert metrics(on_dask) == metrics(whole)


def test_cli_workers_option(tmp_path):
    path = tmp_path / "exp.json"
    runner = CliRunner()
    outs = []
    for extra in ([], ["--workers", "2", "--shard-size", "5"]):
        out = tmp_path / f"out{len(outs)}"
        toml = tmp_path / "exp.toml"
        toml.write_text(_to_toml(EXPERIMENT))
        result = runner.invoke(cli, ["--no-plugins", "run", str(toml), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        outs.append(metrics(json.loads((out / "summary.json").read_text())))
    assert outs[0] == outs[1]
    assert not path.exists()


def _to_toml(data) -> str:
    lines = [f'name = "{data["name"]}"', f'seed = {data["seed"]}', f'replicas = {data["replicas"]}',
             f'checkpoints = {data["checkpoints"]}',
             '[problem]', 'objective = "best-arm"', f'budget = {data["problem"]["budget"]}',
             '[source]', 'plugin = "gaussian"', f'means = {data["source"]["means"]}', 'variances = 0.5',
             '[feedback]', 'delay = 2',
             '[[policies]]', 'plugin = "ucb1"', 'tie_break = "random"', '[[policies]]', 'plugin = "sh"']
    return "\n".join(lines) + "\n"
