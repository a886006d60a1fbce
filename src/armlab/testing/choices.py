"""A hash of every choice a policy makes on a seeded problem: a policy's numbers in 16 characters.

Two runs with the same hash made the same choices step by step, stopped the same replicas
and recommended the same arms.  armlab's tests use it for its golden fingerprints (a change of
any built-in policy's numbers fails by name) and for the fast-path contract (the speed paths
and the reference paths make the same choices); a plugin author can pin a policy's numbers
the same way.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from armlab.config import validate_config
from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.orchestrator.montecarlo.simulate import prepare_sources
from armlab.plugins._fast import reference_paths
from armlab.plan import build_plan
from armlab.plugins.registry import Registry, default_registry

__all__ = ["DELAYED_FEEDBACK", "choice_fingerprint", "fast_and_reference_fingerprints"]

#: A ``[feedback]`` table under which policies choose with pending pulls and replicas fall out
#: of step: random delays of 0 to 6 steps, at most 4 trials in flight per replica.
DELAYED_FEEDBACK = {"delay": 0, "delay_model": "uniform", "delay_max": 6, "in_flight": 4}


def choice_fingerprint(config: dict[str, Any], registry: Registry | None = None) -> str:
    """Run the first policy of ``config`` (a config as a dict, one bandit, simulated source)
    through the Monte Carlo engine and return the hex hash of its choices.

    Hashed step by step: which replicas chose, the bandit and arm each chose, the replicas
    the allocator stopped and the bandits whose stopping rule became confident; then the
    final recommendation.
    """
    registry = registry or default_registry(False)
    validated = validate_config(config)
    plan = build_plan(validated, registry)
    replicas = np.arange(validated.replicas)
    sources = prepare_sources(plan, replicas, validated.seed)
    problems = [plan.problem(s, s.truth, b) for b, s in enumerate(sources)]
    policy = plan.policies[0]
    sim = Simulation(policy_factory=policy.create, sources=sources, problems=problems,
                     allocator=plan.create_allocator(policy), feedback=validated.feedback, seed=validated.seed,
                     replicas=replicas, checkpoints=validated.checkpoint_list())
    digest = hashlib.sha256()

    def add(tag: bytes, values: Any) -> None:
        digest.update(tag + np.ascontiguousarray(values, dtype=np.int64).tobytes())

    choose = sim.core.choose

    def recording_choose(rows: np.ndarray):
        choice = choose(rows)
        add(b"step", [sim.step_index])
        for bandit, picked, arms in choice.chosen:
            add(b"chosen", [bandit])
            add(b"rows", picked)
            add(b"arms", arms)
        add(b"stopped", choice.stopped)
        for bandit, closed in choice.closing:
            add(b"closing", [bandit])
            add(b"rows", closed)
        return choice

    sim.core.choose = recording_choose  # type: ignore[method-assign]
    while not sim.finished:
        sim.step()
    add(b"recommend", np.asarray(sim.core.recommend(0)))
    return digest.hexdigest()[:16]


def fast_and_reference_fingerprints(config: dict[str, Any], registry: Registry | None = None) -> tuple[str, str]:
    """:func:`choice_fingerprint` of ``config`` with armlab's speed paths, and inside
    :func:`~armlab.plugins._fast.reference_paths` (every helper recomputing from the
    statistics): equal when the speed paths choose as the definitions do."""
    fast = choice_fingerprint(config, registry)
    with reference_paths():
        return fast, choice_fingerprint(config, registry)
