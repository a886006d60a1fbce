"""glibc's malloc is tuned only in processes armlab owns: the CLI (unless turned off), never a library's host."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.orchestrator.montecarlo.scale import heap
from armlab.plugins.policies.ucb1 import UCB1
from armlab.problem import Objective
from armlab.testing import run_policy

TOP_PAD = (-2, heap.HEADROOM_BYTES)


@pytest.fixture
def mallopt_calls(monkeypatch):
    """Every (parameter, value) passed to glibc's mallopt, which is replaced by a recorder."""
    calls = []

    def mallopt(parameter, value):
        calls.append((parameter, value))
        return 1

    monkeypatch.setattr(heap, "ctypes", SimpleNamespace(CDLL=lambda name: SimpleNamespace(mallopt=mallopt),
                                                        c_int=ctypes.c_int))
    return calls


def test_constructing_a_simulation_leaves_malloc_alone(mallopt_calls):
    run_policy(UCB1(), objective=Objective.REGRET, budget=20)
    assert mallopt_calls == []


@pytest.mark.parametrize(("setting", "expected"), [(None, [TOP_PAD]), ("1", [TOP_PAD]), ("off", []), ("0", [])])
def test_the_cli_reserves_headroom_unless_turned_off(mallopt_calls, monkeypatch, setting, expected):
    if setting is None:
        monkeypatch.delenv(heap.HEAP_ENV, raising=False)
    else:
        monkeypatch.setenv(heap.HEAP_ENV, setting)
    result = CliRunner().invoke(cli, ["--no-plugins", "plugins", "--kind", "allocator"])
    assert result.exit_code == 0 and mallopt_calls == expected


def test_an_unknown_setting_is_a_clear_error(mallopt_calls, monkeypatch):
    monkeypatch.setenv(heap.HEAP_ENV, "lots")
    result = CliRunner().invoke(cli, ["--no-plugins", "plugins"])
    assert result.exit_code == 2 and mallopt_calls == []
    assert "ARMLAB_HEAP_HEADROOM='lots' is not understood: set it to 1" in result.output
