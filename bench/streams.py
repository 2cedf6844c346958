"""Open streams against another user's requests (issue 52.4): `python -m bench.streams`.

`turnkeeper serve` on SQLite (workload G's fake behind it). One user holds a turn that
streams nothing for minutes (the fake's first token is far off) and opens `--streams`
event streams on it (`--max-streams-per-user` raised to let them; raw sockets that read
their headers and then only the keep-alive comments). Another user's request (the
transcript, `GET /api/conversations/{id}`) is timed one after another: idle, under the
open streams, idle again; the ratio is the loaded median over the idle ones' (the
baseline, measured in the same run). `serve`'s RSS is read idle and under the streams.
Then `--stalled` readers open the stream of a long finished answer and never read: the
RSS they add, per reader, is what one stalled stream holds (~256 KiB at most: a page of
events and the transport's buffer), until each is cut off and its slot given back.

Prints its section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from .live import rss, serving


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


FAR = 600_000
"""ms to the held turn's first token: it streams nothing while measured."""


async def user(client: httpx.AsyncClient, text: str) -> tuple[str, dict[str, str], str]:
    """A new conversation with one turn asking `text`: its id, auth, and the turn's id."""
    made = (await client.post("/api/conversations")).json()
    auth = {"authorization": f"Bearer {made['token']}"}
    path = f"/api/conversations/{made['conversation_id']}/turns"
    turn = (await client.post(path, json={"text": text}, headers=auth)).json()
    return made["conversation_id"], auth, turn["turn_id"]


async def median_ms(client: httpx.AsyncClient, path: str, auth: dict[str, str], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        r = await client.get(path, headers=auth)
        times.append((time.perf_counter() - start) * 1000)
        assert r.status_code == 200, r.text
    return statistics.median(times)


async def opened(
    port: int, turn_id: str, auth: dict[str, str], *, rcvbuf: int = 0
) -> socket.socket:
    """A stream's socket once its response's head came (a small `rcvbuf`: a reader that
    never reads)."""
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(s, ("127.0.0.1", port))
    head = (
        f"GET /api/turns/{turn_id}/events HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: {auth['authorization']}\r\n\r\n"
    )
    await loop.sock_sendall(s, head.encode())
    first = await loop.sock_recv(s, 256 if not rcvbuf else 64)
    assert first.startswith(b"HTTP/1.1 200"), first[:80]
    return s


def run(args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        most = str(args.streams + 100)
        flags = ("--max-streams", most, "--max-streams-per-user", most)
        with serving(url, worker=False, concurrency=4, extra=flags) as service:
            return asyncio.run(measured(service.base, service.pid, args))


async def measured(base: str, pid: int, args: argparse.Namespace) -> str:
    port = int(base.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        _, held_auth, held = await user(client, f"key=held pieces=1 gap=0 wait={FAR}")
        other, auth, _ = await user(client, "key=other pieces=3 gap=0 wait=0")
        path = f"/api/conversations/{other}"
        log("warming")
        await median_ms(client, path, auth, 20)  # warm
        idle = [await median_ms(client, path, auth, args.requests)]
        rss_idle = rss(pid)
        log("opening the streams")
        socks = [await opened(port, held, held_auth) for _ in range(args.streams)]
        log("measuring under the streams")
        await asyncio.sleep(1)
        loaded = await median_ms(client, path, auth, args.requests)
        rss_loaded = rss(pid)
        for s in socks:
            s.close()
        await asyncio.sleep(2)
        idle.append(await median_ms(client, path, auth, args.requests))
        log("stalled readers")
        stalled = await stalled_rss(client, port, pid, args.stalled)
    baseline = statistics.mean(idle)
    return report(args, baseline, loaded, rss_idle, rss_loaded, stalled)


async def stalled_rss(client: httpx.AsyncClient, port: int, pid: int, readers: int) -> float:
    """KiB of RSS each stalled reader of a long answer's stream adds."""
    _, auth, turn_id = await user(client, "key=long pieces=20000 gap=0 wait=0")
    poll = f"/api/turns/{turn_id}"
    while True:
        if (await client.get(poll, headers=auth)).json()["status"] not in ("queued", "running"):
            break
        await asyncio.sleep(0.2)  # polling: the turn runs in another process
    log("the long answer is done")
    before = rss(pid)
    socks = [await opened(port, turn_id, auth, rcvbuf=4096) for _ in range(readers)]
    await asyncio.sleep(3)
    grown = rss(pid) - before
    for s in socks:
        s.close()
    return grown / 1024 / max(readers, 1)


def report(
    args: argparse.Namespace,
    baseline: float,
    loaded: float,
    rss_idle: int,
    rss_loaded: int,
    stalled: float,
) -> str:
    ratio = loaded / baseline
    mib = 1024 * 1024
    rows = [
        "## Streams. Another user's request under one user's open streams (issue 52.4)",
        "",
        f"`python -m bench.streams`: `serve` on SQLite; one user holds {args.streams} event"
        " streams open on a turn that streams nothing; another user's transcript request,"
        f" {args.requests} one after another, timed idle, under the streams, and idle again"
        " (the baseline: the idle medians' mean, in the same run).",
        "",
        "| measure | target | this run | verdict |",
        "|---|---|---|---|",
        f"| another user's median, {args.streams} streams open ÷ idle | ≤ 2× | {ratio:.2f}×"
        f" ({loaded:.1f} ms ÷ {baseline:.1f} ms) | {'met' if ratio <= 2 else '**missed**'} |",
        f"| `serve`'s RSS, idle → {args.streams} streams open | bounded |"
        f" {rss_idle / mib:.0f} → {rss_loaded / mib:.0f} MiB"
        f" ({(rss_loaded - rss_idle) / 1024 / args.streams:.0f} KiB per stream) | — |",
        f"| RSS per stalled reader of a 20,000-event answer ({args.stalled} readers)"
        f" | ≤ 256 KiB | {stalled:.0f} KiB | {'met' if stalled <= 256 else '**missed**'} |",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.streams", description=__doc__)
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--stalled", type=int, default=60)
    print(run(parser.parse_args()))


if __name__ == "__main__":
    main()
