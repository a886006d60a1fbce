"""How much memory a simulated experiment needs, estimated before anything runs.

``armlab run`` and ``armlab validate`` refuse a run that cannot fit, with the estimate and the
fix (fewer replicas, or blocks of them), instead of dying inside numpy after minutes of work.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from armlab.errors import ConfigError
from armlab.plan import ExperimentPlan

__all__ = ["check_memory", "memory_needed"]


#: Peak bytes a running simulation holds per replica and arm: the framework's statistics
#: (33 bytes) plus the source's and the policy's own arrays.  The built-in policies peak at
#: 65 to 240 bytes (tracemalloc, 8 and 64 arms), so the estimate takes the high end.
BYTES_PER_ARM = 240
#: Bytes per replica and slot of the ledger that holds delayed results.
BYTES_PER_PENDING = 33


def memory_needed(plans: Sequence[ExperimentPlan], at_once: int) -> int:
    """Estimated peak bytes of the simulated runs ``plans`` with ``at_once`` replicas being
    simulated at the same time (over every process): their per-replica arrays (statistics,
    policy and source state, pending results, checkpoint metrics) plus the checkpoint
    metrics of every policy and run, which are kept until the summary is written.
    ``plans`` must come from :func:`build_plan` with its dry run (it counts the arms)."""
    per_replica = max(sum(plan.arm_counts) * BYTES_PER_ARM + _pending_bytes(plan) + _kept_bytes(plan)
                      for plan in plans)
    kept = sum(len(plan.policies) * plan.config.replicas * _kept_bytes(plan) for plan in plans)
    return at_once * per_replica + kept


def _pending_bytes(plan: ExperimentPlan) -> int:
    feedback = plan.config.feedback
    return 0 if feedback.longest_delay == 0 else feedback.effective_in_flight * BYTES_PER_PENDING


def _kept_bytes(plan: ExperimentPlan) -> int:
    """Bytes per replica of one policy's results: error and regret per checkpoint, stop time."""
    return (2 * len(plan.config.checkpoint_list()) + 1) * 8


def check_memory(
    plans: Sequence[ExperimentPlan],
    *,
    workers: int = 1,
    block: int | None = None,
    remote: bool = False,
    available: int | None = None,
) -> None:
    """Refuse simulated runs whose estimated memory (:func:`memory_needed`) exceeds
    ``available`` (default: this machine's memory, or this process's cgroup limit).

    ``workers`` processes run the policies (and blocks of ``block`` replicas) side by side;
    ``remote``: they run elsewhere (a Dask scheduler), and only the merged results stay here.
    The message gives the estimate and the fixes: fewer replicas, or smaller blocks.
    """
    simulated = [plan for plan in plans if not plan.live]
    limit = available if available is not None else available_memory()
    if not simulated or limit is None:
        return
    replicas = simulated[0].config.replicas
    units = sum(len(plan.policies) for plan in simulated)  # tasks when no run is split
    if remote:
        at_once = 0
    elif block is None:
        at_once = replicas * min(workers, units)
    else:
        at_once = min(block, replicas) * min(workers, units * math.ceil(replicas / block))
    needed = memory_needed(simulated, at_once)
    if needed <= limit:
        return
    kept = memory_needed(simulated, 0)
    arms = max(sum(plan.arm_counts) for plan in simulated)
    fit = max(1, replicas * limit // needed)
    fixes = f"lower replicas (--replicas; about {fit} fit)"
    if kept < limit and not remote:
        per_replica = (memory_needed(simulated, 1) - kept) * min(workers, units)
        fixes += (f", or simulate blocks of at most {max(1, (limit - kept) // per_replica)} replicas "
                  f"(--shard-size; --workers runs that many blocks side by side)")
    raise ConfigError(
        f"replicas: {replicas} replicas need about {_size(needed)} of memory ({arms} arms x about "
        f"{BYTES_PER_ARM} bytes per replica and arm while a policy runs, plus every policy's results), "
        f"more than the {_size(limit)} here: {fixes}"
    )


def available_memory() -> int | None:
    """This machine's physical memory, or this process's cgroup limit when lower (``None``
    where the platform does not say)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def _size(n: int) -> str:
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
