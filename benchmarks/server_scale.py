"""How `armlab server` scales with stored experiments: start-up time and journal replay speed.

Creates N experiments (default 1,000, examples/live/ab_service.toml each) in a fresh SQLite
storage, then measures (fastest of --repeat) the time to open the storage and build the
server app up to its first answer (nothing is replayed at start), and the replay speed of one
experiment's journal (events/s) after --events ask/tell events.  Results: JSON on stdout and
in benchmarks/results/server_scale.json, with the load average beside them.

    python benchmarks/server_scale.py [--experiments 1000] [--events 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import anyio
import httpx

from armlab.orchestrator.live.session import LiveSession
from armlab.plugins.registry import default_registry
from armlab.service.server_app import create_server_app
from armlab.service.server_experiments import Experiments
from armlab.storage import open_storage

ROOT = Path(__file__).resolve().parents[1]
CONFIG = (ROOT / "examples" / "live" / "ab_service.toml").read_text().replace("budget = 400", "budget = 1000000")
ADMIN = "benchmark-admin-token-0123456789"


async def _first_answer(url: str) -> float:
    """Seconds from opening the storage to the first answer of GET /experiments/e1/status (a
    small journal: the time is the start-up, not a replay)."""
    started = time.perf_counter()
    storage = open_storage(url)
    experiments = Experiments(storage, default_registry())
    app = create_server_app(experiments, admin_token=ADMIN)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://b", headers={"Authorization": f"Bearer {ADMIN}"}
    ) as client:
        assert (await client.get("/experiments/e1/status")).status_code == 200
        seconds = time.perf_counter() - started
    storage.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/armlab.sqlite"
        storage = open_storage(url)
        experiments = Experiments(storage, default_registry())
        started = time.perf_counter()
        for i in range(args.experiments):
            experiments.create(f"e{i}", CONFIG)
        created = time.perf_counter() - started
        journal = storage.open_journal("e0")
        session = LiveSession.resume(journal)
        for _ in range(args.events // 2):
            trial = session.experiment.ask()
            session.experiment.tell(trial.id, float(trial.arm == 2))
        session.close()
        storage.close()
        start_up = min(anyio.run(_first_answer, url) for _ in range(args.repeat))
        replays = []
        for _ in range(args.repeat):
            storage = open_storage(url)
            journal = storage.open_journal("e0")
            t0 = time.perf_counter()
            session = LiveSession.resume(journal)
            replays.append(time.perf_counter() - t0)
            session.close()
            storage.close()
    result = {
        "experiments": args.experiments,
        "create_seconds": round(created, 3),
        "start_to_first_answer_seconds": round(start_up, 4),
        "replayed_events": args.events,
        "replay_events_per_second": round(args.events / min(replays), 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))
    (ROOT / "benchmarks" / "results").mkdir(exist_ok=True)
    (ROOT / "benchmarks" / "results" / "server_scale.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
