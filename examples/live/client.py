"""A client of `armlab serve`: concurrent workers ask for trials, run them, and tell rewards.

    ARMLAB_TOKEN=... python examples/live/client.py --url http://127.0.0.1:8000 --clients 8

Each worker loops: ``POST /ask`` (with an idempotency key, waiting for a free slot), a
random latency standing in for the real trial, ``POST /tell``.  It survives a service
restart: a request that fails for lack of a connection is retried with the same body, so a
lost answer to /ask returns the same trial and a repeated /tell is a harmless duplicate.
The simulated outcome of a trial is a pure function of (variant, pull), so the answers do
not depend on timing.  ``--acks FILE`` appends one JSON line per acknowledged tell.
Needs httpx (armlab's `live` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import sys
import time

import httpx

RATES = {"A": 0.04, "B": 0.05, "C": 0.07}


def outcome(arm_name: str, pull: int, rates: dict[str, float] = RATES) -> float:
    """1.0 if trial number ``pull`` of variant ``arm_name`` converts, else 0.0."""
    digest = hashlib.sha256(f"outcome/{arm_name}/{pull}".encode()).digest()
    u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
    return float(u < rates.get(arm_name, 0.5))


class Client:
    def __init__(self, url: str, token: str | None, give_up: float, acks: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(base_url=url, headers=headers, timeout=10.0)
        self.deadline = time.monotonic() + give_up
        self.acks = open(acks, "a", encoding="utf-8") if acks else None  # noqa: SIM115
        self.told = 0

    async def call(self, path: str, body: dict) -> httpx.Response:
        """POST, retrying while the service is unreachable (restarting), up to the deadline."""
        while True:
            try:
                return await self.http.post(path, json=body)
            except httpx.TransportError:
                if time.monotonic() > self.deadline:
                    raise
                await asyncio.sleep(0.05)

    async def worker(self, number: int, latency: float) -> None:
        rng = random.Random(number)
        for n in range(10**9):
            answer = await self.call("/ask", {"key": f"worker{number}-{n}", "wait": 5})
            if answer.status_code == 409:
                if answer.json()["state"] == "in_flight_full":
                    continue
                return  # budget spent, policy stopped or finished
            answer.raise_for_status()
            trial = answer.json()
            await asyncio.sleep(rng.uniform(0, latency))
            reward = outcome(trial["arm_name"], trial["pull"])
            report = await self.call("/tell", {"trial_id": trial["trial_id"], "reward": reward})
            report.raise_for_status()
            self.told += 1
            if self.acks is not None:
                self.acks.write(json.dumps({"trial_id": trial["trial_id"], "reward": reward, **report.json()}) + "\n")
                self.acks.flush()

    async def close(self) -> None:
        await self.http.aclose()
        if self.acks is not None:
            self.acks.close()


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--clients", type=int, default=8, help="concurrent workers")
    parser.add_argument("--latency", type=float, default=0.05, help="longest simulated trial, seconds")
    parser.add_argument("--give-up", type=float, default=60.0, help="seconds to keep retrying an unreachable service")
    parser.add_argument("--acks", help="append acknowledged tells to this JSON-lines file")
    args = parser.parse_args(argv)
    client = Client(args.url, os.environ.get("ARMLAB_TOKEN"), args.give_up, args.acks)
    try:
        await asyncio.gather(*(client.worker(i, args.latency) for i in range(args.clients)))
        status = (await client.http.get("/status")).json()
    finally:
        await client.close()
    print(f"told {client.told} rewards; service: {status['state']}, counts {status['counts']}, "
          f"recommendation {status['recommendation']}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
