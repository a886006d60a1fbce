"""Write and replay speed of the PostgreSQL journal against the SQLite journal, same run (not a test).

Both journals hold the same events (a dispatch and a result per trial) and commit durably
(SQLite ``synchronous=FULL`` in WAL mode; PostgreSQL ``synchronous_commit = on`` with
``fsync`` on, on a throwaway cluster of its own on 127.0.0.1):

* ``single``: one event per transaction (``append``), as an unbatched writer does;
* ``batch``: ``--batch`` events per transaction (``append_many``), as the group commit does;
* ``replay``: every event read back and verified against the chain (``events()``).

Each figure is the fastest of ``--repeats`` alternating rounds; the ratio PostgreSQL/SQLite is
printed with the load average, since the machine may be shared.

    python benchmarks/postgres_journal.py [--events 2000] [--batch 100] [--repeats 3]

Writes benchmarks/results/postgres_journal.json.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from armlab.orchestrator.journal.postgres import PostgresJournal
from armlab.orchestrator.journal.postgres_schema import upgrade
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal
from armlab.testing.postgres import ThrowawayCluster

RESULTS = Path(__file__).resolve().parent / "results" / "postgres_journal.json"


def workload(n: int) -> list[Event]:
    events = []
    for trial in range(n // 2):
        events += [Event("dispatch", trial, trial % 4, at=trial * 1.0),
                   Event("result", trial, trial % 4, reward=(trial % 7) / 7, at=trial + 0.5)]
    return events


def rate(count: int, work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return count / (time.perf_counter() - start)


def one_round(url: str, folder: Path, events: list[Event], batch: int) -> dict[str, dict[str, float]]:
    """events/s of each store for each mode, in one round (PostgreSQL then SQLite)."""
    openers = {
        "postgresql": (lambda name: PostgresJournal.create(url, name, {"seed": 1}),
                       lambda name: PostgresJournal.open(url, name)),
        "sqlite": (lambda name: Journal.create(folder / f"{name}.sqlite", {"seed": 1}),
                   lambda name: Journal.open(folder / f"{name}.sqlite")),
    }
    out: dict[str, dict[str, float]] = {}
    for store, (create, reopen) in openers.items():
        single, batched = secrets.token_hex(6), secrets.token_hex(6)
        with create(single) as journal:
            out.setdefault("single", {})[store] = rate(len(events), lambda: [journal.append(e) for e in events])
        with create(batched) as journal:
            chunks = [events[i : i + batch] for i in range(0, len(events), batch)]
            out.setdefault("batch", {})[store] = rate(len(events), lambda: [journal.append_many(c) for c in chunks])
        with reopen(batched) as journal:
            out.setdefault("replay", {})[store] = rate(len(events), lambda: sum(1 for _ in journal.events()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    events = workload(args.events)
    cluster = ThrowawayCluster.start()
    try:
        url = cluster.new_database()
        upgrade(url)
        with tempfile.TemporaryDirectory() as folder:
            rounds = [one_round(url, Path(folder), events, args.batch) for _ in range(args.repeats)]
    finally:
        cluster.stop()
    best = {mode: {store: max(r[mode][store] for r in rounds) for store in rounds[0][mode]} for mode in rounds[0]}
    report = {
        "events": len(events), "batch": args.batch, "repeats": args.repeats,
        "events_per_s": {mode: {k: round(v) for k, v in stores.items()} for mode, stores in best.items()},
        "postgresql_over_sqlite": {mode: round(s["postgresql"] / s["sqlite"], 2) for mode, s in best.items()},
        "load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
    }
    for mode, stores in report["events_per_s"].items():
        print(f"{mode:7s} postgresql {stores['postgresql']:>8,} events/s   sqlite {stores['sqlite']:>8,} events/s"
              f"   ratio {report['postgresql_over_sqlite'][mode]:.2f}")
    print(f"load average {report['load_average']} on {report['cpus']} cpus")
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
