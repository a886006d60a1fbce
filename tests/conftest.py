"""Shared fixtures: a plugin registry without third-party plugins, quiet structured logs."""

from __future__ import annotations

import copy
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
