"""The local Dask cluster armlab starts: workers forked from this process before it runs any
thread (or, where that is not safe, from a server that imported armlab), with Dask's
per-worker machinery it does not need turned off there only, none outliving this process,
and a freed worker that gets its next task while this process still runs one of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from armlab import run_experiment
from armlab.config import validate_config
from armlab.orchestrator.montecarlo.scale import processes
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner
from armlab.orchestrator.montecarlo.scale.collect import Collector
from armlab.orchestrator.montecarlo.scale.tasks import plan_tasks
from armlab.plan import build_plan

pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.system]

STUDY = {
    "name": "local-cluster", "seed": 5, "replicas": 20, "checkpoint_every": 20,
    "problem": {"objective": "regret", "budget": 40},
    "source": {"plugin": "bernoulli", "means": [0.7, 0.5, 0.4, 0.3]},
    "policies": [{"plugin": "ucb1"}, {"plugin": "thompson"}, {"plugin": "moss"}, {"plugin": "uniform"}],
}

#: How long the test waits for something that takes well under a second when it works.
WAIT_S = 30


def worker_view() -> tuple[int, bool, bool]:
    """(A Dask worker's part) its parent process, and two of its settings."""
    import dask

    return (os.getppid(), dask.config.get("distributed.worker.profile.enabled"),
            dask.config.get("distributed.admin.system-monitor.gil.enabled"))


def test_local_workers_fork_from_a_server_with_profiling_off_and_this_process_keeps_its_settings():
    """Two processes work: this one and a local cluster of one."""
    import dask

    from armlab.orchestrator.montecarlo.scale.dask_cluster import DaskCluster

    with DaskCluster(2, None, 5.0) as cluster:
        assert cluster._up.wait(WAIT_S) and cluster._failure is None
        views = list(cluster._client.run(worker_view).values())
    assert len(views) == 1
    assert all(parent != os.getpid() for parent, _, _ in views)  # the fork server's children, not spawned here
    assert all(profile is False and gil is False for _, profile, gil in views)
    assert dask.config.get("distributed.worker.profile.enabled") is True  # only the local cluster's


def test_warm_forks_the_dask_workers_from_this_process_with_profiling_off(monkeypatch):
    """Where local workers would fork, the local cluster's do too, at ``warm`` (before the
    config is read); they are its workers, and none is left after it."""
    from armlab.orchestrator.montecarlo.scale.dask_cluster import DaskCluster

    monkeypatch.setattr(processes, "start_method", lambda: "fork")
    scale = ShardRunner(workers=3, executor="dask")
    with scale.warm():
        forked = scale._forked
        assert forked is not None
        children = [process for process, _ in forked._waiting]
        assert all(process.is_alive() for process in children)
        with DaskCluster(3, None, 5.0, forked=forked) as cluster:
            assert cluster._up.wait(WAIT_S) and cluster._failure is None
            cluster._client.wait_for_workers(2, timeout=WAIT_S)
            views = list(cluster._client.run(worker_view).values())
        assert [process.exitcode for process in children] == [0, 0]  # ended by their closed pipes, not killed
    assert sorted(views) == [(os.getpid(), False, False)] * 2


def test_without_a_safe_fork_the_cluster_s_nannies_start_its_workers(monkeypatch):
    monkeypatch.setattr(processes, "start_method", lambda: "spawn")
    scale = ShardRunner(workers=2, executor="dask")
    with scale.warm():
        assert scale._forked is None


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_local_cluster_gives_the_numbers_of_one_process(monkeypatch, method):
    monkeypatch.setattr(processes, "start_method", lambda: method)
    config = validate_config(STUDY)
    alone = run_experiment(config)
    spread = run_experiment(config, scale=ShardRunner(workers=2, executor="dask"))
    assert [p["regret_mean"] for p in spread["policies"].values()] == \
        [p["regret_mean"] for p in alone["policies"].values()]


def test_forked_dask_workers_end_when_this_process_is_killed(tmp_path):
    """A process killed with SIGKILL closes nothing: its workers see their pipe close and end,
    waiting ones and running ones alike."""
    script = textwrap.dedent("""
        import os, sys, time
        from armlab.orchestrator.montecarlo.scale.dask_forked import ForkedWorkers
        from armlab.orchestrator.montecarlo.scale.dask_cluster import LOCAL_CLUSTER_SETTINGS
        import distributed

        working, waiting = ForkedWorkers(1), ForkedWorkers(1)
        cluster = working.cluster(LOCAL_CLUSTER_SETTINGS)
        client = distributed.Client(cluster)
        client.wait_for_workers(1, timeout=60)
        pids = [process.pid for process, _ in working._waiting + waiting._waiting]
        print(*pids, flush=True)
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.communicate()
    deadline = time.monotonic() + WAIT_S
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (an orphan is reaped by init; a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_freed_worker_gets_its_next_task_while_this_process_still_runs_its_own(registry, monkeypatch):
    """This process takes the costliest task before the one-worker cluster is up and holds
    it until the cluster has been sent two more: the second goes out when the worker
    finishes the first, not when this process is done (it used to wait for this process)."""
    from armlab.orchestrator.montecarlo.scale import dask_cluster

    config = validate_config(STUDY)
    plans = [build_plan(variant, registry) for _, variant in config.variants()]
    tasks = plan_tasks(plans, workers=1)
    sent: list[int] = []
    two_sent = threading.Event()
    send, run_task = dask_cluster._Handout.send, dask_cluster.run_task

    def recorded(handout, client, count):
        futures = send(handout, client, count)
        sent.extend(handout.sent[future].policy for future in futures)
        if len(sent) >= 2:
            two_sent.set()
        return futures

    held = []

    def run_here(plan, task, report):
        held.append(two_sent.wait(WAIT_S))
        return run_task(plan, task, report)

    monkeypatch.setattr(dask_cluster._Handout, "send", recorded)
    monkeypatch.setattr(dask_cluster, "run_task", run_here)
    finished = []
    with dask_cluster.DaskCluster(1, None, 5.0) as cluster:
        cluster.run(plans, tasks, Collector(plans, tasks, None), lambda task, output: finished.append(task),
                    lambda tasks: list(reversed(tasks)))
    assert held and all(held)  # the cluster got two tasks while this process ran its first
    assert sorted(task.policy for task in finished) == [0, 1, 2, 3]
