"""Shared helpers of the live-experiment tests: configs, experiments and a reward function."""

from __future__ import annotations

import copy
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from armlab.config import ExperimentConfig, validate_config
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.plugins.policies.ucb1 import UCB1
from armlab.problem import Objective, Problem

EXTERNAL_EXPERIMENT: dict[str, Any] = {
    "name": "live-test",
    "seed": 4,
    "problem": {"objective": "best-arm", "budget": 30},
    "source": {"plugin": "external", "arms": ["A", "B", "C"], "reward_min": 0, "reward_max": 1},
    "feedback": {"in_flight": 3},
    "policies": [{"plugin": "thompson"}],
}


SERVED_TOKEN = "p" * 32
SERVE = [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "serve"]


class ServedExperiment:
    """`armlab serve` in a child process (stdout: the banner with the port, then the final line)."""

    def __init__(
        self, config: Path | None, journal: Path, port: int = 0, log: Path | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        env = {**os.environ, "ARMLAB_TOKEN": SERVED_TOKEN}
        args = [] if config is None else [str(config)]
        self.process = subprocess.Popen(
            [*SERVE, *args, "--journal", str(journal), "--port", str(port), "--log", str(log or f"{journal}.log"),
             *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        self.port = port

    async def started(self) -> ServedExperiment:
        assert self.process.stdout is not None
        with anyio.fail_after(60):
            banner = await anyio.to_thread.run_sync(self.process.stdout.readline, abandon_on_cancel=True)
        assert "serving" in banner, banner + self.process.stderr.read()
        self.port = int(banner.split("http://")[1].split()[0].rsplit(":", 1)[1])
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no cleanup at all
        self.process.wait(timeout=30)
        self.close()

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        out, self.stderr = self.process.communicate(timeout=30)
        self.close()
        return self.process.returncode, out

    def close(self) -> None:
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def live_config(**tables: Any) -> ExperimentConfig:
    """The external-source experiment with tables updated (``source={...}`` merges)."""
    data = copy.deepcopy(EXTERNAL_EXPERIMENT)
    for key, value in tables.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return validate_config(data)


def conversion(arm: int, pull: int, rates: tuple[float, ...] = (0.2, 0.5, 0.8)) -> float:
    """A deterministic Bernoulli answer: trial ``pull`` of ``arm`` converts or not."""
    digest = hashlib.sha256(f"{arm}/{pull}".encode()).digest()
    return float((int.from_bytes(digest[:8], "big") + 0.5) / 2**64 < rates[arm % len(rates)])


def make_experiment(
    policy: Any = None, *, n_arms: int = 3, budget: int = 20, in_flight: int = 2, seed: int = 1, **kw: Any
) -> LiveExperiment:
    problem = Problem(objective=Objective.BEST_ARM, budget=budget, n_arms=n_arms,
                      reward_range=kw.pop("reward_range", (0.0, 1.0)))
    policy = policy or UCB1()
    return LiveExperiment(lambda: policy, [problem], seed, in_flight=in_flight, **kw)


def state_of(experiment: LiveExperiment) -> dict[str, Any]:
    """Everything that must agree between a run and its replay (bit for bit)."""
    s = experiment.stats
    return {
        "counts": s.counts.tolist(),
        "means": s.means.tolist(),
        "m2": s.m2.tolist(),
        "pending": s.pending.tolist(),
        "dispatched": s.dispatched.tolist(),
        "trials": [(r.trial, r.status, r.reward, r.late_reward) for r in experiment.trials],
        "recommendation": experiment.recommendation(),
        "recommendations": experiment.recommendations,
        "summary": experiment.summary(),
        "state": experiment.state,
    }


@pytest.fixture
def live() -> SimpleNamespace:
    """The helpers above, for test modules (tests import nothing from conftest directly)."""
    return SimpleNamespace(config=live_config, conversion=conversion, experiment=make_experiment, state=state_of,
                           serve=ServedExperiment)


@pytest.fixture
def clock():
    """A fake wall clock: ``clock.now`` seconds, advanced by the test."""

    class Clock:
        now = 1000.0

        def __call__(self) -> float:
            return self.now

    return Clock()
