"""D. Idle polling: `GET /api/turns/{id}?after=N` with nothing new, 200 concurrent clients.

Two server processes run side by side under the same uvicorn settings: the
turnkeeper API over a SQLite store holding one running turn at version N, and
a bare Starlette app with one route that answers 204. A client in this
process (raw asyncio sockets, HTTP/1.1 keep-alive, one request in flight per
connection) drives one server at a time for a short slice, alternating.
`python -m bench.workloads.d_polling api|bare FOLDER` runs a server and prints its
port (and, for the API, the path and token to poll) on one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from ..method import ROOT, median, spread
from ..report import Context, Headline, Section, number, table, verdict

TITLE = "D. Idle polling"
CLIENTS = 200
TARGET = 0.60
VERSION = 3
SERVER: dict[str, Any] = {"host": "127.0.0.1", "loop": "asyncio", "http": "h11", "workers": 1}
"""The uvicorn settings both servers run under."""


# ---- the servers (in their own processes) ------------------------------------


def bare_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def nothing_new(request: Request) -> Response:
        return Response(status_code=204)

    return Starlette(routes=[Route("/api/turns/{turn_id}", nothing_new)])


class NoQueue:
    async def enqueue(self, turn_id: str) -> None:
        raise RuntimeError("this server only answers polls")


async def api_app(folder: str) -> tuple[Any, dict[str, str]]:
    """The API over a store holding one running turn published at `VERSION`."""
    from turnkeeper import state as published
    from turnkeeper.api import create_app
    from turnkeeper.store import new_token, open_store

    store = await open_store(f"sqlite:///{folder}/api.db")
    token, token_hash = new_token()
    conversation_id = await store.create_conversation(token_hash)
    turn = await store.create_turn(conversation_id, "go")
    fence = await store.claim(turn.turn_id, 3600, "anthropic")
    assert fence is not None
    state = published.queued(turn.turn_id, conversation_id, "go")
    for _ in range(2, VERSION + 1):
        state = state.running()
        await store.publish(turn.turn_id, fence, state)
    path = f"/api/turns/{turn.turn_id}?after={VERSION}"
    return create_app(store, NoQueue()), {"path": path, "token": token}


async def serve(kind: str, folder: str) -> None:
    """Serve until terminated; the store lives in `folder`, which the parent removes."""
    import socket

    import uvicorn

    app, poll = await api_app(folder) if kind == "api" else (bare_app(), {"path": "/api/turns/t_1"})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, **SERVER, lifespan="off", log_level="warning")
    config.backlog = 1024
    print(json.dumps({"port": sock.getsockname()[1], **poll}), flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


# ---- the client (in the bench process) ---------------------------------------


def request_bytes(target: dict[str, Any]) -> bytes:
    head = [f"GET {target['path']} HTTP/1.1", f"Host: 127.0.0.1:{target['port']}"]
    if target.get("token"):
        head.append(f"Authorization: Bearer {target['token']}")
    return ("\r\n".join(head) + "\r\n\r\n").encode()


async def client(target: dict[str, Any], until: float, counts: list[int]) -> None:
    """One keep-alive connection polling until `until`; counts the 204s."""
    reader, writer = await asyncio.open_connection("127.0.0.1", target["port"])
    request = request_bytes(target)
    try:
        while time.perf_counter() < until:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 204"):
                raise RuntimeError(f"expected 204, got {head[:200]!r}")
            counts[0] += 1
    finally:
        writer.close()


async def load(target: dict[str, Any], seconds: float, clients: int) -> float:
    """Requests per second over one slice of `seconds` with `clients` connections."""
    counts = [0]
    started = time.perf_counter()
    async with asyncio.timeout(seconds + 30):
        await asyncio.gather(*(client(target, started + seconds, counts) for _ in range(clients)))
    return counts[0] / (time.perf_counter() - started)


@contextmanager
def server(kind: str) -> Iterator[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    folder = tempfile.TemporaryDirectory(prefix="turnkeeper-bench-")
    command = [sys.executable, "-m", __name__, kind, folder.name]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {kind} server did not start")
        yield json.loads(line)
    finally:
        proc.terminate()
        proc.wait(10)
        folder.cleanup()


async def ready(target: dict[str, Any]) -> None:
    """Wait (bounded) until the server accepts connections and answers a poll."""
    async with asyncio.timeout(30):
        while True:
            try:
                await load(target, 0.0, 1)
                return
            except OSError:
                await asyncio.sleep(0.05)


def measure(ctx: Context, rounds: int, seconds: float, clients: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {"bare": [], "api": []}
    with ExitStack() as stack:
        targets = {kind: stack.enter_context(server(kind)) for kind in found}
        for target in targets.values():
            asyncio.run(ready(target))
        for r in range(rounds):
            order = ["bare", "api"] if r % 2 == 0 else ["api", "bare"]
            for kind in order:
                found[kind].append(asyncio.run(load(targets[kind], seconds, clients)))
            ctx.log(f"  round {r + 1}/{rounds}")
    return found


def run(ctx: Context) -> Section:
    rounds, seconds = ctx.size(6, 1), (0.3 if ctx.smoke else 2.0)
    clients = ctx.size(CLIENTS, 20)
    found = measure(ctx, rounds, seconds, clients)
    ratios = [a / b for a, b in zip(found["api"], found["bare"], strict=True)]
    ratio = median(ratios)
    rows = [
        ["bare Starlette endpoint (baseline)", number(median(found["bare"])), "1", "–"],
        [
            "turnkeeper `GET /api/turns/{id}?after=N`",
            number(median(found["api"])),
            f"{number(ratio * 100)}%",
            spread([r * 100 for r in ratios]),
        ],
    ]
    head = Headline(
        "D",
        "requests / s ÷ bare Starlette",
        "≥ 60%",
        f"{number(ratio * 100)}%",
        verdict(ratio >= TARGET),
    )
    headers = ["server", "requests / s (median)", "÷ bare (median of per-round ratios)", "IQR, %"]
    body = DESCRIPTION.format(clients=clients, seconds=seconds, rounds=rounds)
    return Section(TITLE, body + "\n" + table(headers, rows) + "\n", [head])


DESCRIPTION = """\
{clients} clients poll one turn that has nothing new (`?after=` its current
version): each answer is a 204 after the API has checked the bearer token
against the conversation's hash and looked the turn's version up in the
store (the embedded SQLite store, WAL). The baseline is a bare Starlette
route answering 204, served by the same uvicorn settings (one process,
`loop="asyncio"`, `http="h11"`, no access log) at the same time in another
process. The client is raw asyncio sockets in the bench process, HTTP/1.1
keep-alive, one request in flight per connection; slices of {seconds} s,
{rounds} rounds, the order alternating.
"""


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2]))
