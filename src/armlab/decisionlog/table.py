"""A logged run as one row per trial, in numpy columns (pandas is only needed to export).

Each trial's row joins its ``dispatch`` event (arm, unit, time, propensity) with its outcome
(``result``: completed with a reward; ``failed`` / ``abandoned``; none yet: pending) and a
``late`` report if one came.  The experiment's stored config names the arms, the policy and
the checkpoints; :class:`LogContext` keeps what offline evaluation needs of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from armlab.config import validate_config
from armlab.decisionlog.source import LoggedRun
from armlab.errors import ArmlabError
from armlab.plan import build_plan
from armlab.plugins.registry import Registry, default_registry
from armlab.problem import Problem

__all__ = ["COLUMNS", "LogContext", "TrialTable", "trial_table"]

#: The columns of a trial table, in order (``docs/decision-log.md`` describes each).
COLUMNS = (
    "trial", "unit", "bandit", "arm", "arm_name", "dispatched_at", "observed_at", "status", "reward",
    "late_reward", "metrics", "propensity", "propensity_estimated", "propensity_draws", "policy", "checkpoint",
)


@dataclass(frozen=True)
class LogContext:
    """What a log says of its experiment: each bandit's problem (arms, reward range,
    objective), the policy's label, the seed and the exploration floor."""

    problems: list[Problem]
    policy: str = ""
    seed: int = 0
    exploration_floor: float = 0.0
    arm_names: list[list[str]] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)


@dataclass
class TrialTable:
    """The trials of a log: :data:`COLUMNS` as equal-length arrays (missing values: NaN for
    numbers, ``None`` for text, -1 for ``checkpoint`` and ``propensity_draws``)."""

    columns: dict[str, np.ndarray]
    context: LogContext

    def __len__(self) -> int:
        return int(self.columns["trial"].size)


def context_of(meta: dict[str, Any], registry: Registry | None = None) -> LogContext:
    """The :class:`LogContext` of a run from its stored meta data (its config rebuilt)."""
    config = validate_config(meta["config"]).located(meta.get("base_dir"))
    try:
        plan = build_plan(config, registry or default_registry(False), dry_run=False)
        sources = [plan.create_source(b) for b in range(len(plan.bandits))]
    except ArmlabError as exc:
        raise ArmlabError(f"the log's stored config cannot be rebuilt here ({exc})") from None
    return LogContext(
        problems=[plan.problem(s, None, b) for b, s in enumerate(sources)],
        policy=str(meta.get("policy", "")), seed=config.seed, exploration_floor=config.exploration_floor,
        arm_names=[list(map(str, getattr(s, "arm_names", range(s.n_arms)))) for s in sources],
        checkpoints=config.checkpoint_list(),
    )


def trial_table(run: LoggedRun, registry: Registry | None = None) -> TrialTable:
    """One row per dispatched trial of ``run``, in trial order."""
    context = context_of(run.meta, registry)
    dispatches = [e for e in run.events if e.kind == "dispatch"]
    n = len(dispatches)
    row = {e.trial: i for i, e in enumerate(dispatches)}
    status = np.full(n, "pending", dtype=object)
    observed_at, reward, late = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    metrics = np.full(n, None, dtype=object)
    for e in run.events:
        if e.kind in ("dispatch", "stopped", "retired"):
            continue
        i = row[e.trial]
        if e.kind == "late":
            late[i] = e.reward
            continue
        status[i] = {"result": "completed"}.get(e.kind, e.kind)
        observed_at[i] = e.at
        if e.kind == "result":
            reward[i], metrics[i] = e.reward, e.metrics
    trial = np.fromiter((e.trial for e in dispatches), np.int64, n)
    bandit = np.fromiter((e.bandit for e in dispatches), np.int64, n)
    arm = np.fromiter((e.arm for e in dispatches), np.int64, n)
    propensity = np.fromiter((np.nan if e.propensity is None else e.propensity for e in dispatches), float, n)
    draws = np.fromiter((-1 if e.propensity_draws is None else e.propensity_draws for e in dispatches), np.int64, n)
    names = context.arm_names
    targets = np.asarray(context.checkpoints, dtype=np.int64)
    at = np.searchsorted(targets, trial + 1)  # the first checkpoint that counts this trial
    columns = {
        "trial": trial,
        "unit": np.array([e.unit for e in dispatches], dtype=object),
        "bandit": bandit,
        "arm": arm,
        "arm_name": np.array([names[b][a] if b < len(names) and a < len(names[b]) else str(a)
                              for b, a in zip(bandit.tolist(), arm.tolist(), strict=True)], dtype=object),
        "dispatched_at": np.fromiter((e.at for e in dispatches), float, n),
        "observed_at": observed_at,
        "status": status,
        "reward": reward,
        "late_reward": late,
        "metrics": metrics,
        "propensity": propensity,
        "propensity_estimated": draws > 0,
        "propensity_draws": draws,
        "policy": np.full(n, context.policy, dtype=object),
        "checkpoint": np.where(at < targets.size, targets[np.minimum(at, targets.size - 1)], -1),
    }
    return TrialTable(columns, context)
