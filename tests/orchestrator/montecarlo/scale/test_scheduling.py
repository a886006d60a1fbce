"""Tasks go out costliest first, run by run, and a long sweep is reduced run by run: the
numbers never depend on the order, and this process never holds every task's arrays."""

from __future__ import annotations

import gc
import multiprocessing

import pytest

from armlab.config import validate_config
from armlab.orchestrator.montecarlo.scale import task_costs
from armlab.orchestrator.montecarlo.scale.processes import _claimed
from armlab.orchestrator.montecarlo.scale.saved_tasks import SavedTasks
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner
from armlab.orchestrator.montecarlo.probe import seconds_per_trial
from armlab.orchestrator.montecarlo.scale.task_costs import (
    StepCost,
    fill_the_start,
    order_by_cost,
    probe_step_cost,
    probed_costs,
)
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput, plan_tasks
from armlab.plan import build_plan

STUDY = {
    "name": "scheduling", "seed": 5, "replicas": 40, "checkpoint_every": 20,
    "problem": {"objective": "regret", "budget": 60},
    "source": {"plugin": "bernoulli", "means": [0.7, 0.5, 0.4, 0.3]},
    "policies": [{"plugin": "ucb1"}, {"plugin": "thompson"}, {"plugin": "moss"}, {"plugin": "uniform"}],
}


def plans_of(registry, **updates):
    config = validate_config({**STUDY, **updates})
    return [build_plan(variant, registry) for _, variant in config.variants()]


def regret(results):
    return [[(r.label, r.cp_regret.tolist()) for r in run] for run in results]


def test_tasks_go_out_in_decreasing_cost_run_by_run():
    tasks = [Task(0, 0, 0, 10), Task(0, 1, 0, 10), Task(1, 0, 0, 10), Task(1, 1, 0, 10), Task(1, 2, 0, 10)]
    costs = [1.0, 5.0, 2.0, 2.0, 3.0]  # run 0: 6 in all, run 1: 7
    assert order_by_cost(tasks, costs) == [Task(1, 2, 0, 10), Task(1, 0, 0, 10), Task(1, 1, 0, 10),  # equals: as given
                                           Task(0, 1, 0, 10), Task(0, 0, 0, 10)]


def test_a_cheap_task_fills_the_start_when_the_costliest_would_end_the_run_late():
    """Six tasks, one 2.2 times as long as the others, a worker 0.7 s late.  Costliest first,
    this process runs it while the worker starts and the two end at 4.2 s; a cheap one here
    first, the costliest to the worker: 4.0 s."""
    tasks = [Task(0, policy, 0, 10) for policy in range(6)]
    cost = dict(zip(tasks, [2.2, 1.0, 1.0, 1.0, 1.0, 1.0], strict=True))
    ordered = order_by_cost(tasks, list(cost.values()))
    assert fill_the_start(ordered, cost, workers=2, start_seconds=0.7) == [tasks[5], *tasks[:5]]
    assert fill_the_start(ordered, cost, workers=2, start_seconds=0.0) == ordered  # no start-up: costliest first
    assert fill_the_start(ordered, cost, workers=1, start_seconds=0.7) == ordered  # this process alone


def test_only_the_last_run_lends_tasks_to_the_start():
    """The runs of a sweep stay together (each is reduced as soon as it is complete): the
    task moved to the front is the last run's, though run 0 has cheaper ones."""
    tasks = [Task(0, 0, 0, 10), Task(0, 1, 0, 10), Task(0, 2, 0, 10), Task(0, 3, 0, 10),
             Task(1, 0, 0, 10), Task(1, 1, 0, 10)]
    cost = dict(zip(tasks, [2.2, 0.9, 0.9, 0.9, 1.0, 1.0], strict=True))
    ordered = order_by_cost(tasks, list(cost.values()))
    assert ordered == tasks
    assert fill_the_start(ordered, cost, workers=2, start_seconds=0.7) == [tasks[5], *tasks[:5]]


def test_the_probe_times_only_the_steps_after_its_warmup(registry):
    """A clock that advances one second a reading: two timed steps of 4 replicas are 8 trials,
    whatever the warm-up ran before."""
    plan = plans_of(registry, replicas=4)[0]
    readings = iter(range(100))
    for warmup in (0, 4):
        assert seconds_per_trial(plan, plan.policies[0], replicas=4, steps=2, warmup=warmup,
                                 clock=lambda: float(next(readings))) == 1 / 8


def test_workers_claim_tasks_in_the_scheduled_order():
    claims = multiprocessing.get_context("spawn").Value("q", 0)
    assert list(_claimed(claims, [2, 0, 3, 1])) == [2, 0, 3, 1]
    assert list(_claimed(claims, [2, 0, 3, 1])) == []  # every position claimed once


def test_the_probe_runs_once_per_policy_and_scales_with_trials_width_and_arms(registry, monkeypatch):
    probed = []

    def probe(plan, spec):
        probed.append(spec.label)
        return {"ucb1": StepCost(0.0, 1.0, 2), "thompson": StepCost(40.0, 3.0, 2)}[spec.label]

    monkeypatch.setattr(task_costs, "probe_step_cost", probe)
    plans = plans_of(registry, policies=STUDY["policies"][:2],
                     sweep={"parameter": "source.means", "values": [[0.5, 0.4], [0.7, 0.5, 0.4, 0.3]]})
    tasks = plan_tasks(plans, workers=2)
    costs = dict(zip(tasks, probed_costs(plans, tasks), strict=True))
    assert sorted(probed) == ["thompson", "ucb1"]  # one probe each, on the first run that has it
    assert costs[Task(0, 1, 0, 40)] == (40.0 / 40 + 3.0) * 40 * 60  # seconds per trial at 40 replicas x trials
    assert costs[Task(1, 1, 0, 40)] == 2 * costs[Task(0, 1, 0, 40)]  # twice the arms
    assert costs[Task(1, 0, 0, 40)] == costs[Task(1, 1, 0, 40)] / 4


def test_the_fixed_part_of_a_step_weighs_less_on_a_wider_block():
    cost = StepCost(fixed=64.0, per_replica=1.0, arms=4)
    assert cost.per_trial(16, 4) == 5.0 and cost.per_trial(64, 4) == 2.0 and cost.per_trial(64, 8) == 4.0


def test_the_probe_separates_the_fixed_part_of_a_step_from_the_part_per_replica(registry, monkeypatch):
    """Measured at two widths, seconds per trial = fixed / width + per_replica gives both parts;
    timing noise that would make one negative leaves it at 0."""
    plan = plans_of(registry, replicas=100)[0]
    measured = {16: 5.0, 64: 2.0}  # fixed 64, per replica 1
    monkeypatch.setattr(task_costs, "seconds_per_trial", lambda plan, spec, replicas, **_: measured[replicas])
    assert probe_step_cost(plan, plan.policies[0]) == StepCost(64.0, 1.0, 4)
    measured = {16: 1.0, 64: 2.0}  # wider looked dearer: no fixed part
    assert probe_step_cost(plan, plan.policies[0]) == StepCost(0.0, 2.0, 4)
    measured = {16: 9.0, 64: 0.5}  # the fixed part alone more than explains the wide probe
    assert probe_step_cost(plan, plan.policies[0]) == StepCost(32.0, 0.0, 4)
    measured = {16: 3.0}  # a run of 16 replicas: one width, all of it per replica
    narrow = plans_of(registry, replicas=16)[0]
    assert probe_step_cost(narrow, narrow.policies[0]) == StepCost(0.0, 3.0, 4)


def test_the_real_probe_gives_a_positive_cost_and_leaves_the_numbers_alone(registry):
    plans = plans_of(registry)
    before = regret(ShardRunner().run(plans))
    tasks = plan_tasks(plans, workers=4)
    assert all(cost > 0 for cost in probed_costs(plans, tasks))
    assert regret(ShardRunner().run(plans)) == before


def reversed_config_order(plans, tasks):
    """A cost model that puts the last policy first (module level: worker processes never call it)."""
    return [float(task.policy) for task in tasks]


@pytest.mark.system
def test_an_injected_cost_model_orders_the_tasks_and_the_numbers_stay_bit_identical(registry):
    plans = plans_of(registry)
    calls = []

    def model(given_plans, tasks):
        calls.append(list(tasks))
        return reversed_config_order(given_plans, tasks)

    one = ShardRunner(workers=1).run(plans)
    two = ShardRunner(workers=2, cost_model=model).run(plans)
    assert calls == [plan_tasks(plans, workers=2)]  # asked once, for the planned tasks, in the main process
    assert order_by_cost(calls[0], reversed_config_order(plans, calls[0]))[0].policy == 3
    assert regret(two) == regret(one)


@pytest.mark.slow
@pytest.mark.system
def test_a_dask_cluster_hands_out_tasks_in_the_scheduled_order(registry):
    """One worker thread: the tasks run one at a time, in decreasing cost."""
    pytest.importorskip("distributed")
    from armlab.orchestrator.montecarlo.scale.dask_cluster import DaskCluster
    from armlab.orchestrator.montecarlo.scale.collect import Collector
    from armlab.orchestrator.montecarlo.scale.task_costs import scheduler

    plans = plans_of(registry)
    tasks = plan_tasks(plans, workers=1)
    finished = []
    with DaskCluster(1, None, 5.0, this_process_works=False) as cluster:
        cluster.run(plans, tasks, Collector(plans, tasks, None), lambda task, output: finished.append(task),
                    scheduler(plans, reversed_config_order))
    assert [task.policy for task in finished] == [3, 2, 1, 0]


@pytest.mark.slow
@pytest.mark.system
def test_a_dask_cluster_holds_one_task_per_worker_thread_and_gets_the_costliest_left(registry, monkeypatch):
    """Two worker threads: the two costliest go first, then one task each time one completes
    (all at once, Dask would tie each task to a worker when it is submitted)."""
    pytest.importorskip("distributed")
    from armlab.orchestrator.montecarlo.scale import dask_cluster
    from armlab.orchestrator.montecarlo.scale.collect import Collector
    from armlab.orchestrator.montecarlo.scale.dask_cluster import DaskCluster
    from armlab.orchestrator.montecarlo.scale.task_costs import scheduler

    sent = []
    send = dask_cluster._Handout.send

    def recorded(handout, client, count):
        futures = send(handout, client, count)
        sent.append([handout.sent[future].policy for future in futures])
        return futures

    monkeypatch.setattr(dask_cluster._Handout, "send", recorded)
    plans = plans_of(registry)
    tasks = plan_tasks(plans, workers=2)
    with DaskCluster(2, None, 5.0, this_process_works=False) as cluster:
        cluster.run(plans, tasks, Collector(plans, tasks, None), lambda task, output: None,
                    scheduler(plans, reversed_config_order))
    assert sent == [[3, 2], [1], [0], [], []]


@pytest.mark.slow
@pytest.mark.system
def test_this_process_runs_tasks_while_a_local_dask_cluster_starts_and_beside_it(registry, monkeypatch):
    """Until the cluster is up this process takes tasks in the schedule's order, and it goes
    on beside the cluster (of one process, with ``workers = 2``); the numbers are those of one process."""
    pytest.importorskip("distributed")
    from armlab.orchestrator.montecarlo.scale import dask_cluster

    plans = plans_of(registry)
    one = ShardRunner(workers=1).run(plans)
    clusters, here = [], []
    enter, run_task = dask_cluster.DaskCluster.__enter__, dask_cluster.run_task

    def entered(cluster):
        clusters.append(cluster)
        return enter(cluster)

    def run_here(plan, task, report):
        here.append(task)
        output = run_task(plan, task, report)
        if len(here) == 2:  # then wait for the cluster, which takes the rest
            clusters[0]._up.wait()
        return output

    monkeypatch.setattr(dask_cluster.DaskCluster, "__enter__", entered)
    monkeypatch.setattr(dask_cluster, "run_task", run_here)
    two = ShardRunner(workers=2, executor="dask", cost_model=reversed_config_order).run(plans)
    assert [task.policy for task in here] == [3, 2, 0]  # the costliest first; 1 went to the cluster once up
    assert regret(two) == regret(one)


def live_task_outputs() -> int:
    gc.collect()
    return sum(isinstance(thing, TaskOutput) for thing in gc.get_objects())


@pytest.mark.slow
@pytest.mark.system
def test_a_200_value_sweep_streams_to_disk_and_is_reduced_run_by_run(registry, tmp_path):
    """Every run is reduced as soon as it is complete: when a run is reduced, this process
    holds the task outputs of a few runs, not of the 200, and the finished tasks are on disk."""
    config = validate_config({**STUDY, "replicas": 4, "checkpoint_every": None, "checkpoints": [10],
                              "policies": STUDY["policies"][:2],
                              "sweep": {"parameter": "problem.budget", "values": list(range(10, 210))}})
    plans = [build_plan(variant, registry) for _, variant in config.variants()]
    saved = SavedTasks.open(tmp_path, config)
    held, on_disk = [], []

    def reduce(run, results):
        if run % 25 == 0:  # a census of the heap costs a while
            held.append(live_task_outputs())
            on_disk.append(len(list(saved.folder.glob("*.npz"))))
        return [(r.label, r.cp_regret[:, -1].tolist()) for r in results]

    runs = ShardRunner(workers=2).run(plans, saved=saved, reduce=reduce)
    assert len(runs) == 200 and len(held) == 8
    assert max(held) <= 4, held  # the run being reduced (2 policies) and at most one more task in hand
    assert on_disk == sorted(on_disk) and on_disk[0] >= 2 and len(list(saved.folder.glob("*.npz"))) == 400
    resumed = ShardRunner(workers=1).run(plans, saved=saved, reduce=reduce)  # everything saved: nothing runs
    assert resumed == runs
    assert runs == ShardRunner(workers=1).run(plans, reduce=reduce)  # nothing saved: held in memory, same numbers
