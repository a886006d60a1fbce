"""Scale-out: split replicas into shards, run them in worker processes or on Dask, merge.

Every number a replica produces is a pure function of the seed and its global replica id,
so a shard ``[start, stop)`` computes exactly what the same replicas compute inside one big
batch.  Merging concatenates the per-replica arrays in replica order; the aggregates are then
computed once, so the summary is bit-identical for any shard size, worker count or executor.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from armlab.errors import ConfigError
from armlab.orchestrator.simulate import PolicyResult, simulate
from armlab.plan import ExperimentPlan

__all__ = ["ShardRunner", "merge_results", "split_replicas"]

#: Per-replica arrays a shard sends back for each policy label.
ShardArrays = dict[str, dict[str, Any]]


def split_replicas(replicas: int, shard_size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` blocks of at most ``shard_size`` consecutive replica ids."""
    return [(start, min(start + shard_size, replicas)) for start in range(0, replicas, shard_size)]


def _run_block(plan: ExperimentPlan, seed: int, start: int, stop: int) -> ShardArrays:
    results = anyio.run(
        lambda: simulate(plan, seed=seed, replicas=np.arange(start, stop)), backend="asyncio"
    )
    return {
        r.label: {
            "cp_error": r.cp_error,
            "cp_regret": r.cp_regret,
            "stopped_at": r.stopped_at,
            "extra": r.extra,
            "trials": r.trials,
            "wall_seconds": r.wall_seconds,
        }
        for r in results
    }


def merge_results(plan: ExperimentPlan, shards: Sequence[ShardArrays], blocks: Sequence[tuple[int, int]]) -> list[PolicyResult]:
    """Concatenate shard arrays in replica order into one result per policy."""
    order = np.argsort([start for start, _ in blocks], kind="stable")
    merged = []
    for spec in plan.policies:
        parts = [shards[i][spec.label] for i in order]
        if any(part["extra"] for part in parts) and len(parts) > 1:
            raise ConfigError(
                "step-observer metrics ([metrics]) cannot be merged across shards yet; "
                "run this experiment with --workers 1"
            )
        merged.append(
            PolicyResult(
                label=spec.label,
                spec=spec,
                replicas=np.concatenate([np.arange(*blocks[i]) for i in order]),
                cp_error=np.concatenate([p["cp_error"] for p in parts]),
                cp_regret=np.concatenate([p["cp_regret"] for p in parts]),
                stopped_at=np.concatenate([p["stopped_at"] for p in parts]),
                extra=parts[0]["extra"],
                trials=sum(p["trials"] for p in parts),
                wall_seconds=sum(p["wall_seconds"] for p in parts),
            )
        )
    return merged


# The plan travels to local workers by fork inheritance, not by pickling, so plugin classes
# defined anywhere (tests, notebooks) work in workers.
_INHERITED: list[ExperimentPlan] = []


def _run_inherited(index: int, seed: int, start: int, stop: int) -> ShardArrays:
    return _run_block(_INHERITED[index], seed, start, stop)


def _run_from_config(config_json: str, seed: int, start: int, stop: int) -> ShardArrays:
    """Dask worker entry: rebuild the plan from the config with the worker's plugins."""
    from armlab.config import ExperimentConfig
    from armlab.plan import build_plan
    from armlab.plugins.manager import get_plugin_manager
    from armlab.plugins.registry import Registry

    plan = build_plan(ExperimentConfig.model_validate_json(config_json), Registry(get_plugin_manager()), dry_run=False)
    return _run_block(plan, seed, start, stop)


@dataclass
class ShardRunner:
    """Runs simulated plans shard by shard on local processes or a Dask cluster.

    ``executor="local"`` uses ``workers`` forked processes; ``executor="dask"`` connects to
    ``scheduler`` (an address) or starts a local cluster with ``workers`` workers.
    """

    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    shard_size: int | None = None

    def run(self, plans: Sequence[ExperimentPlan]) -> list[list[PolicyResult]]:
        """Results of every plan (sweep variants fan out together with their shards)."""
        jobs = []
        for index, plan in enumerate(plans):
            replicas = plan.config.replicas
            size = self.shard_size or max(1, math.ceil(replicas / max(self.workers, 1)))
            for block in split_replicas(replicas, size):
                jobs.append((index, block))
        outputs = self._map(plans, jobs)
        results = []
        for index, plan in enumerate(plans):
            mine = [(out, block) for (i, block), out in zip(jobs, outputs, strict=True) if i == index]
            results.append(merge_results(plan, [o for o, _ in mine], [b for _, b in mine]))
        return results

    def _map(self, plans: Sequence[ExperimentPlan], jobs: list[tuple[int, tuple[int, int]]]) -> list[ShardArrays]:
        if self.executor == "dask":
            return self._map_dask(plans, jobs)
        if self.executor != "local":
            raise ConfigError(f"unknown executor {self.executor!r}; use 'local' or 'dask'")
        if self.workers <= 1:
            return [_run_block(plans[i], plans[i].config.seed, *block) for i, block in jobs]
        _INHERITED[:] = list(plans)
        try:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
                futures = [pool.submit(_run_inherited, i, plans[i].config.seed, *block) for i, block in jobs]
                return [future.result() for future in futures]
        finally:
            _INHERITED.clear()

    def _map_dask(self, plans: Sequence[ExperimentPlan], jobs) -> list[ShardArrays]:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ConfigError(
                "executor 'dask' needs the optional dependency: pip install 'armlab[dask]'"
            ) from None
        configs = [plan.config.model_dump_json() for plan in plans]
        if self.scheduler:
            client = Client(self.scheduler)
            cluster = None
        else:
            cluster = LocalCluster(n_workers=max(self.workers, 1), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        try:
            futures = [
                client.submit(_run_from_config, configs[i], plans[i].config.seed, start, stop, pure=False)
                for i, (start, stop) in jobs
            ]
            return client.gather(futures)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
