"""A serving process freezes what start-up built and collects its youngest generation less
often (armlab.service.collector); both servers set it up before they run."""

from __future__ import annotations

import gc

import uvicorn
from fastapi import FastAPI

from armlab.service import cli as service_cli
from armlab.service.collector import YOUNG_THRESHOLD, serving_collector


def test_serving_freezes_start_up_and_raises_only_the_young_threshold():
    before = gc.get_threshold()
    try:
        serving_collector()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2]) and YOUNG_THRESHOLD > before[0]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test process goes on as it was
        gc.set_threshold(*before)


def test_the_server_is_built_with_the_serving_collector(monkeypatch):
    calls = []
    monkeypatch.setattr(service_cli, "serving_collector", lambda: calls.append("set up"))
    service_cli._server(uvicorn, FastAPI(), 5.0, 10)
    assert calls == ["set up"]
