"""Owner takeover time of ``armlab server`` on PostgreSQL, and replay speed (not a test).

Two server processes on one throwaway cluster (127.0.0.1), 8 clients (armlab.client, which
follows the non-owner's 307) spread over both; the owner of the experiment is killed with
SIGKILL ``--kills`` times at random moments and restarted on its port
(:func:`armlab.testing.takeover.drill`).  A takeover is the time from the kill to the first
``/ask`` answered by the other process (which opens the journal, whose lock the kill freed,
and replays it).  Then the experiment's journal is replayed once more in this process
(:meth:`LiveSession.resume`: every event verified and applied) for the replay rate.

    python benchmarks/takeover.py [--kills 20] [--seed 0]

Prints the median and worst takeover and the replay rate with the load average; writes
benchmarks/results/takeover.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from armlab.orchestrator.journal.postgres_schema import upgrade
from armlab.orchestrator.live.session import LiveSession
from armlab.plugins.registry import default_registry
from armlab.storage import open_storage
from armlab.testing.postgres import ThrowawayCluster
from armlab.testing.takeover import drill

RESULTS = Path(__file__).parent / "results" / "takeover.json"


def replay_rate(url: str) -> tuple[int, float]:
    """Events in the experiment's journal, and events/s of a full replay."""
    storage = open_storage(url)
    try:
        with storage.open_journal("ab") as journal:
            events = sum(1 for _ in journal.events())
            started = time.perf_counter()
            LiveSession.resume(journal, None, default_registry(False))
            return events, events / (time.perf_counter() - started)
    finally:
        storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cluster = ThrowawayCluster.start()
    try:
        url = cluster.new_database()
        upgrade(url)
        with tempfile.TemporaryDirectory() as folder:
            seen = anyio.run(lambda: drill(url, Path(folder), kills=args.kills, seed=args.seed))
        events, rate = replay_rate(url)
    finally:
        cluster.stop()
    report = {
        "kills": args.kills, "acknowledged_tells": len(seen.acks),
        "takeover_s": {"median": round(statistics.median(seen.takeovers), 3), "worst": round(max(seen.takeovers), 3),
                       "all": [round(t, 3) for t in seen.takeovers]},
        "replay": {"events": events, "events_per_s": round(rate)},
        "load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
    }
    print(f"takeover after kill -9: median {report['takeover_s']['median']:.2f} s, worst "
          f"{report['takeover_s']['worst']:.2f} s ({args.kills} kills, {len(seen.acks)} acknowledged tells)")
    print(f"replay: {events:,} events at {report['replay']['events_per_s']:,} events/s")
    print(f"load average {report['load_average']} on {report['cpus']} cpus")
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
