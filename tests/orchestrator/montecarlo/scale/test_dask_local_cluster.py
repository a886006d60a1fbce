"""The local Dask cluster armlab starts: workers that fork ready from a server, with Dask's
per-worker machinery it does not need turned off there only, and a freed worker that gets
its next task while this process still runs one of its own."""

from __future__ import annotations

import os
import threading

import pytest

from armlab.config import validate_config
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
