"""Any split, worker count or executor gives the same numbers, the same checkpoint lines and
progress as the run goes."""

from __future__ import annotations

import copy
import json

import pytest
import structlog
from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.config import validate_config
from armlab.errors import ConfigError
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner

EXPERIMENT = {
    "name": "shards", "seed": 9, "replicas": 23, "checkpoints": [60, 120],
    "problem": {"objective": "best-arm", "budget": 120},
    "source": {"plugin": "gaussian", "means": [0.5, 0.45, 0.4, 0.3, 0.2], "variances": 0.5},
    "feedback": {"delay": 2},
    "policies": [{"plugin": "ucb1", "tie_break": "random"}, {"plugin": "sh"}],
}


def metrics(summary):
    return {label: (p["error_rate"], p["error_stderr"]) for label, p in summary["policies"].items()}


def without_times(summary):
    """Every policy's summary entry but its timings."""
    return {label: {k: v for k, v in p.items() if k not in ("wall_seconds", "run_steps_per_second")}
            for label, p in summary["policies"].items()}


def checkpoint_lines(logs):
    return sorted((line["policy"], line["trials"], line["value"], line["stderr"])
                  for line in logs if line["event"] == "checkpoint")


@pytest.mark.parametrize(("workers", "shard_size"), [(1, 5), (2, None), (3, 4)])
@pytest.mark.system
def test_local_workers_match_one_batch(workers, shard_size):
    config = validate_config(EXPERIMENT)
    whole = run_experiment(config)
    sharded = run_experiment(config, scale=ShardRunner(workers=workers, shard_size=shard_size))
    assert metrics(sharded) == metrics(whole)


@pytest.mark.system
def test_sweeps_fan_out_with_their_blocks():
    data = copy.deepcopy(EXPERIMENT)
    del data["checkpoints"]
    data["sweep"] = {"parameter": "problem.budget", "values": [60, 120]}
    config = validate_config(data)
    whole = run_experiment(config)
    sharded = run_experiment(config, scale=ShardRunner(workers=2, shard_size=6))
    assert metrics(sharded) == metrics(whole)
    assert [metrics(r) for r in sharded["runs"]] == [metrics(r) for r in whole["runs"]]


@pytest.mark.system
def test_step_metrics_run_on_workers_split_by_policy():
    config = validate_config({**EXPERIMENT, "metrics": {"confidence": True, "confidence_hold": 10}})
    whole = run_experiment(config)
    on_workers = run_experiment(config, scale=ShardRunner(workers=2))
    assert "completion_time_median" in whole["policies"]["ucb1"]
    assert without_times(on_workers) == without_times(whole)


@pytest.mark.system
def test_progress_and_checkpoint_lines_come_from_every_worker():
    config = validate_config(EXPERIMENT)
    with structlog.testing.capture_logs() as whole_logs:
        run_experiment(config)
    calls = []
    with structlog.testing.capture_logs() as logs:
        run_experiment(config, scale=ShardRunner(workers=2, shard_size=6), progress=lambda *c: calls.append(c))
    assert checkpoint_lines(logs) == checkpoint_lines(whole_logs)
    assert len(checkpoint_lines(logs)) == 4  # one per policy and checkpoint, over all blocks
    total = 23 * 120
    for label in ("ucb1", "sh"):
        done = [d for name, d, t in calls if name == label and t == total]
        assert done == sorted(done) and done[-1] == total and len(done) > 4  # every block reported


@pytest.mark.system
def test_dask_local_cluster_matches_one_batch():
    pytest.importorskip("distributed")
    config = validate_config(EXPERIMENT)
    whole = run_experiment(config)
    on_dask = run_experiment(config, scale=ShardRunner(workers=2, executor="dask", shard_size=8))
    assert metrics(on_dask) == metrics(whole)


@pytest.mark.system
def test_dask_cluster_of_processes_at_an_address_matches_one_batch():
    distributed = pytest.importorskip("distributed")
    data = copy.deepcopy(EXPERIMENT)
    del data["checkpoints"]
    data["sweep"] = {"parameter": "problem.budget", "values": [60, 120]}
    config = validate_config(data)
    whole = run_experiment(config)
    calls = []
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        on_dask = run_experiment(config, scale=ShardRunner(executor="dask", scheduler=cluster.scheduler_address),
                                 progress=lambda *c: calls.append(c))
    assert [metrics(r) for r in on_dask["runs"]] == [metrics(r) for r in whole["runs"]]
    assert ("sh", 23 * (60 + 120), 23 * (60 + 120)) in calls


def test_an_unreachable_scheduler_fails_with_a_message():
    pytest.importorskip("distributed")
    scale = ShardRunner(executor="dask", scheduler="tcp://127.0.0.1:1", connect_timeout=0.5)
    with pytest.raises(ConfigError, match=r"cannot reach the Dask scheduler at 'tcp://127.0.0.1:1' within 0.5 s"):
        run_experiment(validate_config(EXPERIMENT), scale=scale)


def test_a_local_dask_cluster_without_dask_installed_names_the_extra_before_anything_runs(monkeypatch):
    """The cluster starts in a background thread, but a missing Dask is told at once."""
    import importlib.util

    from armlab.extras import MissingExtra
    from armlab.orchestrator.montecarlo.scale import dask_cluster

    def missing(name, *args):
        if name == "distributed":
            return None
        return find_spec(name, *args)

    def refuse(module, *args):
        if module == "distributed":
            raise ImportError(module)
        return import_module(module, *args)

    find_spec, import_module = importlib.util.find_spec, importlib.import_module
    monkeypatch.setattr(dask_cluster.importlib.util, "find_spec", missing)
    monkeypatch.setattr("armlab.extras.importlib.import_module", refuse)
    ran = []
    monkeypatch.setattr(dask_cluster, "run_task", lambda *args: ran.append(args))
    with pytest.raises(MissingExtra, match=r"executor 'dask' needs distributed.*pip install -e '\.\[dask\]'"):
        run_experiment(validate_config(EXPERIMENT), scale=ShardRunner(workers=2, executor="dask"))
    assert ran == []


def test_a_scheduler_needs_the_dask_executor(tmp_path):
    with pytest.raises(ConfigError, match="add --executor dask"):
        ShardRunner(scheduler="tcp://127.0.0.1:8786")
    toml = tmp_path / "exp.toml"
    toml.write_text(_to_toml(EXPERIMENT))
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(toml), "--scheduler", "tcp://127.0.0.1:8786"])
    assert result.exit_code == 2 and "is for the Dask executor: add --executor dask" in result.output


@pytest.mark.system
def test_cli_workers_option(tmp_path):
    runner = CliRunner()
    outs = []
    toml = tmp_path / "exp.toml"
    toml.write_text(_to_toml(EXPERIMENT))
    for extra in ([], ["--workers", "2", "--shard-size", "5"]):
        out = tmp_path / f"out{len(outs)}"
        result = runner.invoke(cli, ["--no-plugins", "run", str(toml), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        outs.append(metrics(json.loads((out / "summary.json").read_text())))
    assert outs[0] == outs[1]


def _to_toml(data) -> str:
    lines = [f'name = "{data["name"]}"', f'seed = {data["seed"]}', f'replicas = {data["replicas"]}',
             f'checkpoints = {data["checkpoints"]}',
             '[problem]', 'objective = "best-arm"', f'budget = {data["problem"]["budget"]}',
             '[source]', 'plugin = "gaussian"', f'means = {data["source"]["means"]}', 'variances = 0.5',
             '[feedback]', 'delay = 2',
             '[[policies]]', 'plugin = "ucb1"', 'tie_break = "random"', '[[policies]]', 'plugin = "sh"']
    return "\n".join(lines) + "\n"
