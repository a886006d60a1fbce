"""Monte Carlo runs are plain synchronous code; worker processes are forked (or spawned),
rebuild plans from their configs, and send back their logs, reports, failures and deaths."""

from __future__ import annotations

import multiprocessing
import os
import pathlib
import signal
import sys
import threading
import time

import anyio
import pytest
import structlog

from armlab import Policy, hookimpl, run_experiment, run_experiment_async
from armlab.config import validate_config
from armlab.errors import ArmlabError, PluginError
from armlab.orchestrator.montecarlo.scale import processes
from armlab.orchestrator.montecarlo.scale.processes import WorkerTraceback
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry, default_registry
from armlab.plugins import registry as registry_module

EXPERIMENT = {
    "name": "workers", "seed": 5, "replicas": 12, "checkpoints": [40, 80],
    "problem": {"objective": "best-arm", "budget": 80},
    "source": {"plugin": "gaussian", "means": [0.5, 0.4, 0.3], "variances": 0.5},
    "policies": [{"plugin": "ucb1"}, {"plugin": "uniform"}],
}

#: A policy that proves a worker process ran it: at its first selection a worker creates the
#: file ``flag`` (then logs, fails or dies, as ``in_worker`` says), while this process waits
#: for that file; so with two policies and ``--workers 2`` the worker runs one of them.  Runs
#: of it hand tasks out unprobed (:data:`UNPROBED`): the cost probe would call this process's
#: ``select`` before any worker starts work, and wait out the handshake.
UNPROBED = ShardRunner(workers=2, cost_model=lambda plans, tasks: [1.0] * len(tasks))

HANDSHAKE = '''
import multiprocessing, os, pathlib, time
from armlab import Policy, hookimpl
from armlab.errors import ArmlabError
from armlab.log import get_logger
from armlab.plugins.interfaces import PluginParams

log = get_logger("armlab_handshake")

class HandshakeParams(PluginParams):
    flag: str
    in_worker: str = "log"

class Handshake(Policy):
    """Round robin; see the test module."""
    name = "handshake"
    Params = HandshakeParams

    def reset(self, problem, replicas, rng):
        super().reset(problem, replicas, rng)
        self.first = True

    def select(self, stats):
        if self.first:
            self.first = False
            flag = pathlib.Path(self.params.flag)
            if multiprocessing.parent_process() is None:
                deadline = time.monotonic() + 60
                while not flag.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
            else:
                flag.touch()
                log.warning("handshake_in_worker", pid=os.getpid())
                if self.params.in_worker == "fail":
                    raise ArmlabError("handshake failed in a worker")
                if self.params.in_worker == "exit":
                    os._exit(3)
        return stats.pulls.argmin(axis=1)

@hookimpl
def armlab_register_policies():
    return [Handshake]
'''


def metrics(summary):
    return {label: (p["error_rate"], p["error_stderr"]) for label, p in summary["policies"].items()}


@pytest.fixture
def handshake(fake_dist, tmp_path):
    """``(registry, config(flag, in_worker))``: the installed handshake plugin and an
    experiment comparing two handshake policies."""
    fake_dist("armlab-handshake", "1.0", {"handshake": "armlab_handshake"}, {"armlab_handshake": HANDSHAKE})
    default_registry.cache_clear()

    def config(flag, in_worker="log"):
        entry = {"plugin": "handshake", "flag": str(flag), "in_worker": in_worker}
        return validate_config({**EXPERIMENT, "policies": [{**entry, "label": "a"}, {**entry, "label": "b"}]})

    yield default_registry(True), config
    default_registry.cache_clear()


def test_run_experiment_starts_no_event_loop_for_a_simulated_config(monkeypatch):
    def no_loop(*args, **kwargs):
        raise AssertionError("an event loop was started")

    monkeypatch.setattr(anyio, "run", no_loop)
    assert run_experiment(validate_config(EXPERIMENT))["policies"]["ucb1"]["error_rate"]


async def test_run_experiment_async_leaves_the_loop_free_and_reports_progress_on_it():
    ticks = 0
    progress_threads = set()

    async def tick():
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        summary = await run_experiment_async(validate_config({**EXPERIMENT, "replicas": 200}),
                                             progress=lambda *call: progress_threads.add(threading.get_ident()))
        tg.cancel_scope.cancel()
    assert ticks > 5  # the loop kept running while the simulation ran
    assert progress_threads == {threading.get_ident()}
    alone = run_experiment(validate_config({**EXPERIMENT, "replicas": 200}))
    assert metrics(summary) == metrics(alone)
    finished = {"finished_at": summary["provenance"]["finished_at"]}  # to the second: may differ
    assert summary == alone | {"wall_seconds": summary["wall_seconds"], "policies": summary["policies"],
                               "provenance": alone["provenance"] | finished}


@pytest.mark.system
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_forked_and_spawned_workers_give_the_numbers_of_one_process(monkeypatch, method):
    started = []
    monkeypatch.setattr(processes, "start_method", lambda: started.append(method) or method)
    config = validate_config(EXPERIMENT)
    assert metrics(run_experiment(config, scale=ShardRunner(workers=2))) == metrics(run_experiment(config))
    assert started and set(started) == {method}  # the workers, and the start delay it implies


def test_workers_fork_only_on_linux_from_a_process_without_other_threads(monkeypatch):
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(sys, "platform", "linux")
    assert processes.start_method() == "fork"
    for platform in ("darwin", "win32"):
        monkeypatch.setattr(sys, "platform", platform)
        assert processes.start_method() == "spawn"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert processes.start_method() == "spawn"


def test_a_forked_worker_is_ready_at_once_and_a_spawned_one_later():
    assert processes.start_delay("fork") == 0.0
    assert processes.start_delay("spawn") == processes.WORKER_START_SECONDS > 0


def test_a_forked_worker_inherits_the_plugin_registry_built_before_it(monkeypatch):
    """Built before the fork, once, not in every worker (about 0.14 s each, on its start-up)."""
    monkeypatch.setattr(processes, "start_method", lambda: "fork")
    default_registry.cache_clear()
    crew = processes.Crew(1)
    try:
        assert registry_module._built_registry.cache_info().currsize == 1
    finally:
        crew.stop()
        default_registry.cache_clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; workers fork only on Linux")
def test_a_forked_worker_drops_this_process_s_signal_handlers(monkeypatch):
    """``Crew.stop`` ends workers with SIGTERM: a worker running this process's handler instead would not end."""
    monkeypatch.setattr(processes, "start_method", lambda: "fork")
    monkeypatch.setattr(signal, "signal", signal.signal)  # restored after the test
    signal.signal(signal.SIGTERM, lambda *_: None)
    crew = processes.Crew(1)
    try:
        status = pathlib.Path(f"/proc/{crew.processes[0].pid}/status")
        deadline = time.monotonic() + 30
        while not _signal_set(status, "SigIgn") & (1 << (signal.SIGINT - 1)) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the worker set its own handlers (it ignores SIGINT first)
        assert _signal_set(status, "SigIgn") & (1 << (signal.SIGINT - 1))
        assert not _signal_set(status, "SigCgt") & (1 << (signal.SIGTERM - 1))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        worker = crew.processes[0]
        worker.terminate()
        worker.join(10)
        if worker.exitcode is None:  # it ran the handler and lives on
            worker.kill()
            worker.join()
    assert worker.exitcode == -signal.SIGTERM


def _signal_set(status: pathlib.Path, field: str) -> int:
    """A signal mask of ``/proc/PID/status`` (``SigIgn``, ``SigCgt``) as a number."""
    line = next(line for line in status.read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1], 16)


class Handmade(Policy):
    """A policy registered by hand (test plugin)."""

    name = "test-handmade"

    def select(self, stats):
        return stats.pulls.argmin(axis=1)


class _Registers:
    """A plugin object registering one policy class."""

    def __init__(self, policy: type[Policy]) -> None:
        self.policy = policy

    @hookimpl
    def armlab_register_policies(self):
        return [self.policy]


def _local_policy() -> type[Policy]:
    class LocalPolicy(Handmade):
        name = "test-local"

    return LocalPolicy


def _main_policy() -> type[Policy]:
    return type("MainPolicy", (Handmade,), {"name": "test-main", "__module__": "__main__"})


@pytest.mark.parametrize(("make", "where"), [
    (_local_policy, "is defined inside a function"),
    (_main_policy, "is defined in __main__"),
    (lambda: Handmade, "is registered in this process only"),
])
def test_a_plugin_workers_cannot_rebuild_is_refused_up_front(make, where):
    policy = make()
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_Registers(policy), name="test-plugin")
    registry = Registry(pm)
    config = validate_config({**EXPERIMENT, "policies": [{"plugin": policy.name}, {"plugin": "uniform"}]})
    assert run_experiment(config, registry=registry)  # fine in one process
    calls = []
    with pytest.raises(PluginError) as refused:
        run_experiment(config, registry=registry, scale=ShardRunner(workers=2), progress=lambda *c: calls.append(c))
    assert f"policy plugin {policy.name!r}" in str(refused.value) and where in str(refused.value)
    assert "importable module or package" in str(refused.value) and "--workers 1" in str(refused.value)
    assert calls == []  # refused before anything ran


@pytest.mark.system
def test_a_worker_sends_its_logs_checkpoints_and_numbers(handshake, tmp_path):
    registry, config = handshake
    ready = tmp_path / "ready"
    ready.touch()  # in one process nobody else would create the flag
    with structlog.testing.capture_logs() as alone:
        whole = run_experiment(config(ready), registry=registry)
    with structlog.testing.capture_logs() as logs:
        split = run_experiment(config(tmp_path / "flag"), registry=registry, scale=UNPROBED)
    worker_lines = [line for line in logs if line["event"] == "handshake_in_worker"]
    assert len(worker_lines) == 1 and worker_lines[0]["pid"] != os.getpid()
    assert metrics(split) == metrics(whole)
    assert sorted((line["policy"], line["trials"], line["value"]) for line in logs if line["event"] == "checkpoint") \
        == sorted((line["policy"], line["trials"], line["value"]) for line in alone if line["event"] == "checkpoint")


@pytest.mark.system
def test_a_failure_in_a_worker_is_raised_here(handshake, tmp_path):
    registry, config = handshake
    with pytest.raises(ArmlabError, match="handshake failed in a worker") as failure:
        run_experiment(config(tmp_path / "flag", "fail"), registry=registry, scale=UNPROBED)
    assert isinstance(failure.value.__cause__, WorkerTraceback)
    assert "in select" in str(failure.value.__cause__)
    assert multiprocessing.active_children() == []


@pytest.mark.system
def test_a_worker_that_dies_is_reported(handshake, tmp_path):
    registry, config = handshake
    with pytest.raises(RuntimeError, match=r"worker process armlab-worker-1 died \(exit code 3\).*error is printed above"):
        run_experiment(config(tmp_path / "flag", "exit"), registry=registry, scale=UNPROBED)
    assert multiprocessing.active_children() == []


def armlab_workers() -> list[multiprocessing.process.BaseProcess]:
    return [p for p in multiprocessing.active_children() if p.name.startswith("armlab-worker-")]


@pytest.mark.system
def test_workers_start_before_the_config_is_read_and_the_run_takes_them(monkeypatch):
    """The worker processes import armlab while this process reads and checks the config;
    the numbers are those of one process, and no worker outlives the run."""
    from armlab.orchestrator import runner

    scale = ShardRunner(workers=2)
    alive_while_resolving = []
    resolve = runner._resolve

    def resolving(*args):
        alive_while_resolving.append([p.is_alive() for p in armlab_workers()])
        return resolve(*args)

    monkeypatch.setattr(runner, "_resolve", resolving)
    config = validate_config(EXPERIMENT)
    assert metrics(run_experiment(config, scale=scale)) == metrics(run_experiment(config))
    assert alive_while_resolving == [[True], []]  # started before resolving; the one-process run starts none
    assert armlab_workers() == []


@pytest.mark.system
def test_workers_started_for_a_config_that_is_refused_are_stopped():
    with pytest.raises(ArmlabError, match="budget"):
        run_experiment({**EXPERIMENT, "problem": {"objective": "best-arm", "budget": -1}},
                       scale=ShardRunner(workers=3))
    assert armlab_workers() == []
