"""Workload G's moving parts: the fake, `turnkeeper serve` (and a worker), and SSE readers.

`serving()` starts the streaming fake Messages API (`bench.live_fake`), then
`turnkeeper serve bench.live_app:assistant --provider anthropic` on a database
(on PostgreSQL with `--no-worker` and a `turnkeeper worker` process beside it),
and waits until the API answers. `Reader.turn()` is one user's turn as a page
would run it: a conversation, a turn posted, and the turn's event stream
(`GET /api/turns/{id}/events`) read with httpx until `turn.ended`, noting the
clock (`time.monotonic()`, the fake's clock) as each `text.delta` arrives.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field

import httpx

from .live_fake import cut
from .method import ROOT

APP = ["bench.live_app:assistant", "--app-dir", str(ROOT), "--provider", "anthropic"]


@dataclass
class Service:
    """A running `serve` (and worker): its base URL, its pid, the fake's URL."""

    base: str
    pid: int
    fake: str
    logs: list[subprocess.Popen[str]] = field(default_factory=list)
    """The processes started, for their logs (`tail`)."""


@dataclass
class Seen:
    """What one reader saw of one turn."""

    key: str
    pieces: int
    turn_id: str = ""
    subscribed: float = 0.0
    """When the stream's response headers arrived."""
    deltas: list[tuple[float, str]] = field(default_factory=list)
    """Each `text.delta` event's arrival time and text."""
    ended: bool = False
    failed: str | None = None
    cursor: int = 0
    """The id of the last event taken: where a stream read again resumes."""
    resumed: list[str] = field(default_factory=list)
    """Why each time the stream ended before `turn.ended` and was read again by cursor."""

    @property
    def text(self) -> str:
        return "".join(d for _, d in self.deltas)

    def lags(self, sent: list[float]) -> list[float]:
        """Seconds from the fake's send of the newest piece in each delta to its arrival."""
        ends, total = [], 0
        for word in cut(self.pieces):
            total += len(word)
            ends.append(total)
        lags, have, piece = [], 0, 0
        for arrived, delta in self.deltas:
            have += len(delta)
            while piece + 1 < len(ends) and ends[piece + 1] <= have:
                piece += 1
            if piece < len(sent):
                lags.append(arrived - sent[piece])
        return lags


def raise_file_limit() -> None:
    """As many open files as allowed (the processes started after inherit it)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def started(stack: ExitStack, command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    log = stack.enter_context(tempfile.TemporaryFile("w+"))  # noqa: SIM115 (closed by the stack)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT, env=env
    )

    def stop() -> None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    stack.callback(stop)
    process.log = log  # type: ignore[attr-defined]
    return process


def tail(process: subprocess.Popen[str]) -> str:
    log = process.log  # type: ignore[attr-defined]
    log.seek(0)
    return "".join(log.read().splitlines(keepends=True)[-20:])


@contextmanager
def serving(
    url: str, *, worker: bool, concurrency: int, extra: tuple[str, ...] = ()
) -> Iterator[Service]:
    """The fake, `serve` on `url` (with `extra` flags) and (with `worker`) a worker, until
    the block ends."""
    raise_file_limit()
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    with ExitStack() as stack:
        fake = started(stack, [sys.executable, "-m", "bench.live_fake"], env)
        assert fake.stdout is not None
        fake_url = f"http://127.0.0.1:{fake.stdout.readline().split()[1]}"
        env |= {"ANTHROPIC_BASE_URL": fake_url, "ANTHROPIC_API_KEY": "sk-bench-not-real"}
        port, slots = free_port(), ["--concurrency", str(concurrency)]
        tk = [sys.executable, "-m", "turnkeeper"]
        flags = ["--no-worker"] if worker else slots
        serve_args = ["serve", *APP, *flags, *extra, "--database", url, "--port", str(port)]
        serve = started(stack, [*tk, *serve_args], env)
        base = f"http://127.0.0.1:{port}"
        asyncio.run(until_up(base, serve))
        if worker:
            worker_process = started(stack, [*tk, "worker", *APP, *slots, "--database", url], env)
            asyncio.run(until_working(base, worker_process))
        yield Service(base, serve.pid, fake_url, [fake, serve])


async def until_up(base: str, process: subprocess.Popen[str]) -> None:
    async with httpx.AsyncClient() as client, asyncio.timeout(60):
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"serve exited:\n{tail(process)}")
            try:
                if (await client.get(f"{base}/openapi.json")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)  # polling: the server starts in another process


async def until_working(base: str, process: subprocess.Popen[str]) -> None:
    """One turn through the worker, which is then ready (warm)."""
    async with Reader(base) as reader:
        seen = await asyncio.wait_for(reader.turn("warm", 1, 0.0, 0.0), 60)
    if not seen.ended:
        raise RuntimeError(f"the worker ran no turn ({seen.failed}):\n{tail(process)}")


RESUMES = 5
"""Times a reader reads a stream again by cursor before it counts the turn as lost."""


class Reader:
    """Users running turns and reading their streams: each user (a page) with an httpx client
    of its own, as each reader's browser has its own connections. One client shared by 1,000
    users is one connection pool doing every user's bookkeeping: under load it fell seconds
    behind, opened a new connection for nearly every request and left the last ones idle,
    and its requests met `serve` closing them (`bench/NOTES.md`)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.free: list[httpx.AsyncClient] = []
        self.made: list[httpx.AsyncClient] = []
        self.tls = ssl.create_default_context()
        """One context for every client (each would load the CA bundle; the API is HTTP)."""

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self.made:
            await client.aclose()

    @asynccontextmanager
    async def user(self) -> AsyncIterator[httpx.AsyncClient]:
        """A user's client: a free one (turns one after another are one user's), or a new one."""
        if self.free:
            client = self.free.pop()
        else:
            # An idle connection expires after 5 s (httpx's default), well before serve's
            # keep-alive (120 s): this client closes it, not serve as a request goes out.
            limits = httpx.Limits(max_connections=2, keepalive_expiry=5.0)
            timeout = httpx.Timeout(120.0, connect=60.0, pool=120.0)
            client = httpx.AsyncClient(
                base_url=self.base, limits=limits, timeout=timeout, verify=self.tls
            )
            self.made.append(client)
        try:
            yield client
        finally:
            self.free.append(client)

    async def turn(self, key: str, pieces: int, gap_ms: float, wait_ms: float) -> Seen:
        """One turn asking the fake for `pieces` pieces, read to its end."""
        seen = Seen(key, pieces)
        async with self.user() as client:
            try:
                created = (await client.post("/api/conversations")).json()
                auth = {"authorization": f"Bearer {created['token']}"}
                text = f"key={key} pieces={pieces} gap={gap_ms} wait={wait_ms}"
                path = f"/api/conversations/{created['conversation_id']}/turns"
                sent = await client.post(path, json={"text": text}, headers=auth)
                seen.turn_id = sent.json()["turn_id"]
                await self.read(client, seen.turn_id, auth, seen)
            except (httpx.HTTPError, KeyError, ValueError) as e:
                seen.failed = why(e)
        return seen

    async def read(
        self, client: httpx.AsyncClient, turn_id: str, auth: dict[str, str], seen: Seen
    ) -> None:
        """Read the turn's stream to `turn.ended` as a page does: a stream that ends before
        it (the server ends one whose sends wait too long) or breaks is read again from the
        last event's id (`Last-Event-ID`), so what is counted lost is lost to a reader."""
        path = f"/api/turns/{turn_id}/events"
        for _ in range(RESUMES + 1):
            headers = {**auth, "last-event-id": str(seen.cursor)} if seen.cursor else auth
            try:
                await self._events(client, path, headers, seen)
                said = "the stream ended before turn.ended"
            except httpx.TransportError as e:
                said = why(e)
            if seen.ended:
                return
            seen.resumed.append(said)
        seen.failed = f"not ended after {RESUMES} resumes: {seen.resumed[-1]}"

    @staticmethod
    async def _events(
        client: httpx.AsyncClient, path: str, headers: dict[str, str], seen: Seen
    ) -> None:
        """One response's events, each taken when its blank line ends it (as EventSource
        does), the cursor moved with each."""
        async with client.stream("GET", path, headers=headers) as response:
            seen.subscribed = seen.subscribed or time.monotonic()
            kind, data, current = "", "", None
            async for line in response.aiter_lines():
                if line.startswith("id:"):
                    current = int(line[3:])
                elif line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data = line[5:]
                elif not line and kind:
                    seen.cursor = current if current is not None else seen.cursor
                    if kind == "text.delta":
                        seen.deltas.append((time.monotonic(), json.loads(data)["delta"]))
                    elif kind == "turn.ended":
                        seen.ended = True
                    kind, data, current = "", "", None


def why(e: Exception) -> str:
    """What broke, for the log: the request (if one was sent) and each cause beneath the
    exception (httpx's `ReadError` says nothing of itself; a reset is its cause's cause)."""
    said, cause = [f"{type(e).__name__}: {e}".rstrip(": ")], e.__cause__ or e.__context__
    while cause is not None and len(said) < 5:
        said.append(f"{type(cause).__name__}: {cause}".rstrip(": "))
        cause = cause.__cause__ or cause.__context__
    try:
        request = e.request if isinstance(e, httpx.RequestError) else None
    except RuntimeError:  # an error raised before any request was made
        request = None
    where = f" on {request.method} {request.url.path}" if request is not None else ""
    return f"{said[0]}{where}" + (f" ({' <- '.join(said[1:])})" if said[1:] else "")


def stamps(fake: str) -> dict[str, list[float]]:
    """When the fake sent each piece of each key's answer."""
    answer: dict[str, list[float]] = httpx.get(f"{fake}/stamps", timeout=60).json()
    return answer


def rss(pid: int) -> int:
    """The resident set of process `pid`, in bytes."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


async def sampled(pid: int, stop: asyncio.Event, every: float = 0.1) -> int:
    """The peak resident set of `pid` until `stop` is set, sampled every `every` seconds."""
    peak = 0
    while not stop.is_set():
        peak = max(peak, rss(pid))
        await asyncio.sleep(every)
    return peak
