"""A client of `armlab serve`: concurrent workers ask for trials, run them, and tell rewards.

    ARMLAB_TOKEN=... python examples/live/client.py --url http://127.0.0.1:8000 --clients 8

Each worker loops: ask for a trial (waiting for a free slot), a random latency standing in
for the real trial, tell its reward.  The requests go through :class:`armlab.client.AsyncClient`,
which survives a service restart: a request that gets no answer is retried (for up to
``--give-up`` seconds) with the same idempotency key, so a lost answer to an ask returns the
same trial and a repeated tell is a harmless duplicate.  The simulated outcome of a trial
is a pure function of (variant, pull), so the answers do not depend on timing.
``--acks FILE`` appends one JSON line per acknowledged tell.  At the end it prints each
bandit's recommendation as `armlab run` does, by name and index (``C (arm 2)``), one line
per bandit.  Needs armlab's `live` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import sys

from armlab.cli.answers import describe_recommendation
from armlab.client import AsyncClient, ExperimentStoppedError, NoTrialError
from armlab.service.models import StatusOut

RATES = {"A": 0.04, "B": 0.05, "C": 0.07}


def outcome(arm_name: str, pull: int, rates: dict[str, float] = RATES) -> float:
    """1.0 if trial number ``pull`` of variant ``arm_name`` converts, else 0.0."""
    digest = hashlib.sha256(f"outcome/{arm_name}/{pull}".encode()).digest()
    u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
    return float(u < rates.get(arm_name, 0.5))


class Client(AsyncClient):
    """The service's client (``token`` None: ``$ARMLAB_TOKEN``), retrying an unreachable
    service for ``give_up`` seconds per request, and counting (``told``) and logging
    (``acks``) acknowledged tells."""

    def __init__(self, url: str, token: str | None, give_up: float, acks: str | None, insecure: bool = False) -> None:
        super().__init__(url, token, insecure=insecure, retries=None, deadline=give_up, max_backoff=0.5)
        self.acks = open(acks, "a", encoding="utf-8") if acks else None  # noqa: SIM115
        self.told = 0

    async def worker(self, number: int, latency: float) -> None:
        """Run trials until the experiment dispatches no more."""
        rng = random.Random(number)
        while True:
            try:
                trial = await self.ask(wait=5)
            except ExperimentStoppedError:
                return  # budget spent, policy stopped or finished
            except NoTrialError:
                continue  # every slot still taken after 5 s
            await asyncio.sleep(rng.uniform(0, latency))
            reward = outcome(trial.arm_name, trial.pull)
            report = await self.tell(trial.trial_id, reward)
            self.told += 1
            if self.acks is not None:
                self.acks.write(json.dumps({"trial_id": trial.trial_id, "reward": reward, **report.model_dump()}) + "\n")
                self.acks.flush()

    async def close(self) -> None:
        await self.aclose()
        if self.acks is not None:
            self.acks.close()


def recommendation_lines(status: StatusOut) -> list[str]:
    """One line per bandit: its label and its recommended arm(s) by name and index."""
    return [f"{bandit.label}: recommendation {describe_recommendation(bandit.recommendation, [bandit.arm_names], False)}"
            for bandit in status.bandits]


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--clients", type=int, default=8, help="concurrent workers")
    parser.add_argument("--latency", type=float, default=0.05, help="longest simulated trial, seconds")
    parser.add_argument("--give-up", type=float, default=60.0, help="seconds to keep retrying an unreachable service")
    parser.add_argument("--acks", help="append acknowledged tells to this JSON-lines file")
    parser.add_argument("--insecure", action="store_true", help="send no token (a service started with --insecure)")
    args = parser.parse_args(argv)
    client = Client(args.url, None, args.give_up, args.acks, insecure=args.insecure)
    try:
        await asyncio.gather(*(client.worker(i, args.latency) for i in range(args.clients)))
        status = await client.status()
    finally:
        await client.close()
    print(f"told {client.told} rewards; service: {status.state}")
    for line in recommendation_lines(status):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
