"""ask/tell throughput of `armlab serve` with idle `/events` subscribers, against none (not a test).

Every experiment event is offered to every subscriber of ``GET /events`` on the service's
event loop, so subscribers cost the ask/tell path something per event; the service is meant
to stay within 1.5x of its no-subscriber rate with 100 of them.  This drives ``armlab serve``
(UCB1 on 4 arms, the journal on) with ask + tell pairs over ``--clients`` keep-alive
connections, the client of ``service_throughput.py``, while a second child process holds
0, or each of ``--subscribers``, subscriptions open in one of two ways:

* ``reading``: each subscriber reads what has arrived every 0.1 s (a slow dashboard);
* ``stalled``: each subscriber sends its request and never reads again, with a 4 KiB
  receive buffer, so the server's socket and its per-subscriber buffer fill, and from then
  on its events are dropped (the memory the service holds for them is bounded; the
  server's resident memory is reported, and at the end the stalled subscribers read what
  waited for them and count the service's "events dropped" notices).

Each measurement starts a fresh service and subscribers, runs ``--warmup`` pairs (enough to
fill a stalled subscriber's buffers), then times ``--pairs`` pairs.  The configurations
alternate, each is the fastest of ``--repeats``, and each is reported as a ratio to the
fastest run without subscribers, with the server's and the subscribers' CPU seconds and the
load average (the machine may be shared).  ``--profile FILE`` writes the server's cProfile
statistics of the last measurement with the most subscribers to FILE.

    python benchmarks/events_fanout.py [--pairs 1000] [--warmup 1000] [--clients 16] [--subscribers 100 200] [--repeats 3]

Writes benchmarks/results/events_fanout.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from service_throughput import TOKEN, cpu_seconds, drive_pairs, profiled, serve_argv, start

HERE = Path(__file__).resolve()
RESULTS = HERE.parent / "results" / "events_fanout.json"
MODES = ("reading", "stalled")
READ_EVERY = 0.1
STALLED_RECEIVE_BUFFER = 4096


async def subscribe(port: int, mode: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open ``GET /events`` and read its answer's head (200 expected)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if mode == "stalled":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, STALLED_RECEIVE_BUFFER)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"/events answered {head.splitlines()[0].decode()}")
    return reader, writer


async def hold_subscribers(port: int, count: int, mode: str) -> None:
    """Child mode: open ``count`` subscriptions, say "ready", keep them (reading or not) until
    stdin closes, then print what they read as JSON."""
    streams = [await subscribe(port, mode) for _ in range(count)]
    received = {"bytes": 0, "drop_notices": 0}

    async def read_slowly(reader: asyncio.StreamReader) -> None:
        while True:
            await asyncio.sleep(READ_EVERY)
            chunk = await reader.read(1 << 20)
            received["bytes"] += len(chunk)
            received["drop_notices"] += chunk.count(b"events dropped")

    readers = [asyncio.create_task(read_slowly(r)) for r, _ in streams] if mode == "reading" else []
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for task in readers:
        task.cancel()
    if mode == "stalled":  # what waited for them: a drop notice says their buffer at the server filled

        async def read_what_waited(reader: asyncio.StreamReader) -> None:
            while chunk := await read_for(reader, 0.5):
                received["bytes"] += len(chunk)
                received["drop_notices"] += chunk.count(b"events dropped")

        await asyncio.gather(*(read_what_waited(r) for r, _ in streams))
    print(json.dumps(received), flush=True)


async def read_for(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """What arrives within ``seconds`` (empty if nothing)."""
    try:
        return await asyncio.wait_for(reader.read(1 << 20), seconds)
    except asyncio.TimeoutError:
        return b""


def server_memory_mib(pid: int) -> dict[str, float]:
    """The server's resident memory now and at its peak, MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {"rss_mib": int(fields["VmRSS"].split()[0]) / 1024, "peak_rss_mib": int(fields["VmHWM"].split()[0]) / 1024}


def measure_once(args: argparse.Namespace, mode: str, count: int, profile: str | None) -> dict:
    """One fresh service with ``count`` subscribers: warm up, then time ``args.pairs`` pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = serve_argv(Path(tmp), args.warmup + args.pairs + 1000, args.clients)
        server, port = start(profiled(argv, profile) if profile else argv)
        holder = None
        try:
            if count:
                holder = subprocess.Popen([sys.executable, str(HERE), "--hold", str(port), str(count), mode],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                assert holder.stdout is not None and holder.stdout.readline().strip() == "ready", "subscribers failed"
            asyncio.run(drive_pairs(port, args.clients, args.warmup))
            wall, server_cpu = time.perf_counter(), cpu_seconds(server.pid)
            holder_cpu = cpu_seconds(holder.pid) if holder else 0.0
            done = asyncio.run(drive_pairs(port, args.clients, args.pairs))
            wall = time.perf_counter() - wall
            figure = {
                "pairs": done, "pairs_per_second": done / wall, "wall_seconds": wall,
                "server_cpu_seconds": cpu_seconds(server.pid) - server_cpu,
                "subscribers_cpu_seconds": (cpu_seconds(holder.pid) - holder_cpu) if holder else 0.0,
                **server_memory_mib(server.pid),
            }
            if holder:
                figure["subscribers_received"] = json.loads(holder.communicate(input="", timeout=60)[0].splitlines()[-1])
            return figure
        finally:
            if holder and holder.poll() is None:
                holder.kill()
            server.terminate()
            server.communicate(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000, help="ask + tell pairs timed per measurement")
    parser.add_argument("--warmup", type=int, default=1000, help="pairs before the timing starts")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--subscribers", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--repeats", type=int, default=3, help="measurements per configuration (the fastest counts)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the server of the last, largest measurement")
    parser.add_argument("--hold", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hold:
        port, count, mode = args.hold
        asyncio.run(hold_subscribers(int(port), int(count), mode))
        return
    configurations = [("none", 0)] + [(mode, n) for n in args.subscribers for mode in args.modes]
    load_before, uptime_before, own_before = os.getloadavg(), uptime(), os.times()
    runs: dict[str, list[dict]] = {f"{mode}-{n}" if n else mode: [] for mode, n in configurations}
    for repeat in range(args.repeats):
        for mode, count in configurations:  # alternate, so drift in the machine's speed hits all alike
            last = repeat == args.repeats - 1 and (mode, count) == configurations[-1]
            figure = measure_once(args, mode, count, args.profile if last else None)
            runs[f"{mode}-{count}" if count else mode].append(figure)
            print(f"{mode:8s} {count:4d} subscribers: {figure['pairs_per_second']:7.0f} pairs/s  "
                  f"server CPU {figure['server_cpu_seconds']:.2f} s  RSS {figure['rss_mib']:.0f} MiB", flush=True)
    best = {name: max(figures, key=lambda f: f["pairs_per_second"]) for name, figures in runs.items()}
    base = best["none"]["pairs_per_second"]
    own = os.times()
    result = {
        "command": " ".join(["python", "benchmarks/events_fanout.py", *sys.argv[1:]]),
        "clients": args.clients, "pairs": args.pairs, "warmup": args.warmup, "repeats": args.repeats,
        "fastest_pairs_per_second": {name: f["pairs_per_second"] for name, f in best.items()},
        "slowdown_vs_no_subscribers": {name: base / f["pairs_per_second"] for name, f in best.items()},
        "server_cpu_seconds_per_1000_pairs": {name: 1000 * f["server_cpu_seconds"] / f["pairs"]
                                              for name, f in best.items()},
        "server_peak_rss_mib": {name: max(f["peak_rss_mib"] for f in figures) for name, figures in runs.items()},
        "runs": runs,
        "driver_cpu_seconds": (own.user - own_before.user) + (own.system - own_before.system),
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "uptime_before": uptime_before, "uptime_after": uptime(),
        "cpus": os.cpu_count(), "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


if __name__ == "__main__":
    main()
