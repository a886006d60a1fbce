"""Fixtures shared by several test packages: a plugin registry without third-party plugins,
quiet structured logs, a headless browser for the pages armlab serves or writes, made-up
third-party distributions, hand-made run summaries, and the live-experiment helpers (configs
as objects or TOML text, experiments, a served experiment in a child process)."""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
import structlog

from armlab.config import ExperimentConfig, validate_config
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.registry import Registry
from armlab.problem import Objective, Problem

REPO = Path(__file__).resolve().parents[1]  # the repository root


@pytest.fixture(autouse=True)
def _quiet_structlog():
    """Route structlog events to a list instead of stdout (tests inspect them when needed)."""
    structlog.reset_defaults()
    with structlog.testing.capture_logs():
        yield
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def registry() -> Registry:
    """Built-in plugins only (entry points are not loaded, so tests are hermetic)."""
    return Registry(get_plugin_manager(load_entrypoints=False))


BASE_EXPERIMENT: dict[str, Any] = {
    "name": "t",
    "seed": 3,
    "replicas": 20,
    "problem": {"objective": "best-arm", "budget": 200},
    "source": {"plugin": "gaussian", "means": [0.5, 0.4, 0.3, 0.2], "variances": 0.25},
    "policies": [{"plugin": "uniform"}],
}


@pytest.fixture
def make_config():
    """``make_config(**table_updates)``: the base experiment with tables/fields replaced."""

    def make(**updates: Any) -> ExperimentConfig:
        return validate_config(updated(BASE_EXPERIMENT, updates))

    return make


def updated(base: dict[str, Any], tables: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``base`` with ``tables`` applied: a dict merges into a table of the same name,
    ``None`` removes the field or table, anything else replaces it."""
    data = copy.deepcopy(base)
    for key, value in tables.items():
        if value is None:
            data.pop(key, None)
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


@pytest.fixture
async def browser():
    """Debian's chromium, headless, driven by Playwright's Python client (nothing downloaded)."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        async_playwright = None
    executable = shutil.which("chromium")
    if async_playwright is None or executable is None:
        pytest.skip("needs a headless browser: apt-get install chromium (Debian's package) and "
                    "pip install playwright (its Python client; no browser is downloaded)")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=executable)
        yield chromium
        await chromium.close()



@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL cluster for the whole run (initdb in a temporary directory, a free
    port), stopped and removed at the end.  Missing binaries fail the tests that need it, with
    the fix: CI never skips them; a developer without PostgreSQL deselects them with
    ``-m "not postgres"``."""
    from armlab.testing.postgres import ClusterUnavailable, ThrowawayCluster

    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("the PostgreSQL tests need psycopg, part of armlab's 'postgres' extra (and of 'test'): "
                    "pip install -e '.[test]'", pytrace=False)
    try:
        cluster = ThrowawayCluster.start(timeout=60)
    except ClusterUnavailable as exc:
        pytest.fail(f"{exc}\n(without PostgreSQL, deselect these tests with -m \"not postgres\")", pytrace=False)
    yield cluster
    cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster) -> str:
    """The URL of a new, empty database of the run's cluster (one per test)."""
    return postgres_cluster.new_database()


@pytest.fixture
def postgres_storage(postgres_url) -> str:
    """The URL of a new database holding armlab's tables (``armlab storage init``)."""
    from armlab.orchestrator.journal.postgres_schema import upgrade

    upgrade(postgres_url)
    return postgres_url


#: ``install(name, version, entry_points, modules) -> directory``
Installer = Callable[..., Path]


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Installer]:
    """``fake_dist(name, version, {ep_name: ep_value}, {module: source})``: install a
    distribution with ``armlab`` entry points in a temporary directory put on ``sys.path``;
    returns the directory (the ``PYTHONPATH`` of a subprocess that should see it).

    ``importlib.metadata`` finds ``*.dist-info`` directories on any ``sys.path`` entry, so
    this is what ``pip install`` leaves behind, minus the files armlab never reads.
    """
    monkeypatch.syspath_prepend(str(tmp_path))
    written: list[str] = []

    def install(name: str, version: str, entry_points: dict[str, str], modules: dict[str, str] | None = None) -> Path:
        info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = "".join(f"{ep_name} = {value}\n" for ep_name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[armlab]\n{lines}")
        for module, source in (modules or {}).items():
            (tmp_path / f"{module}.py").write_text(source)
            written.append(module)
        importlib.invalidate_caches()
        return tmp_path

    yield install
    for module in written:
        sys.modules.pop(module, None)


def _single_run(objective: str = "best-arm", checkpoints=(10, 20, 30), **policies: dict[str, Any]) -> dict[str, Any]:
    """A hand-made summary of one run; ``policies`` maps labels to their metric entries."""
    return {
        "name": "demo",
        "seed": 1,
        "replicas": 50,
        "budget": checkpoints[-1],
        "objective": objective,
        "checkpoints": list(checkpoints),
        "policies": {label: {"plugin": label, "params": {}, **entry} for label, entry in policies.items()},
        "wall_seconds": 0.1,
    }


def _sweep(parameter: str, values: list[Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A hand-made ``[sweep]`` summary with the shape of the runner's (runs kept whole)."""
    for value, run in zip(values, runs, strict=True):
        run["sweep_value"] = value
    summary = {key: runs[0][key] for key in ("name", "seed", "replicas", "objective", "checkpoints")}
    summary["budget"] = [run["budget"] for run in runs]
    summary["sweep"] = {"parameter": parameter, "values": values}
    summary["policies"] = {
        label: {"plugin": label, "params": {}} for label in runs[0]["policies"]
    }
    summary["runs"] = runs
    return summary


@pytest.fixture
def single_run():
    """``single_run(objective, checkpoints, **{label: entry})``: a one-run summary."""
    return _single_run


@pytest.fixture
def sweep_summary():
    """``sweep_summary(parameter, values, runs)``: a sweep summary around one-run summaries."""
    return _sweep


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
    """The external-source experiment with tables updated (``source={...}`` merges, ``None``
    removes a table)."""
    return validate_config(updated(EXTERNAL_EXPERIMENT, tables))


def live_toml(**tables: Any) -> str:
    """The external-source experiment of :func:`live_config` as the text of a TOML file (what
    ``armlab serve`` and ``armlab run`` read)."""
    return toml_text(updated(EXTERNAL_EXPERIMENT, tables))


def toml_text(data: dict[str, Any]) -> str:
    """``data`` written as TOML: fields first, then ``[table]`` per dict and ``[[table]]`` per
    list of dicts (enough for experiment files; strings are JSON-quoted, which TOML reads)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(v) if isinstance(v, str) else repr(v)

    def fields(table: dict[str, Any]) -> list[str]:
        return [f"{k} = {value(v)}" for k, v in table.items()]

    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
    lines = fields({k: v for k, v in data.items() if k not in tables and k not in arrays})
    for name, table in tables.items():
        lines += [f"[{name}]", *fields(table)]
    for name, rows in arrays.items():
        for row in rows:
            lines += [f"[[{name}]]", *fields(row)]
    return "\n".join(lines) + "\n"


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
    return SimpleNamespace(config=live_config, toml=live_toml, conversion=conversion, experiment=make_experiment,
                           state=state_of, serve=ServedExperiment)
