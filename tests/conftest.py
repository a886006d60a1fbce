"""Shared fixtures: a plugin registry without third-party plugins, quiet structured logs, and
a headless browser for the pages armlab serves or writes."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import structlog

from armlab.config import ExperimentConfig, validate_config
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry

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
        data = copy.deepcopy(BASE_EXPERIMENT)
        for key, value in updates.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key].update(value)
            else:
                data[key] = value
        return validate_config(data)

    return make


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
