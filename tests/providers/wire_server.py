"""A local HTTP server that replays recorded responses in order and records every request.

It listens on 127.0.0.1 on a random port, in a thread of its own (so both
async tests and the CLI's `asyncio.run` can talk to it), and speaks just enough
HTTP/1.1 for the official SDK clients: keep-alive, Content-Length bodies. A
response can also misbehave the way real networks do: never answer, hold its
body back until the server closes, or close the connection part-way through
the body.

A request that asks for `stream: true` and is answered with a whole Messages, Chat
Completions or Responses body gets that body's event stream instead (`tests/streams.py`,
`tests/responses_wire.py`),
so a streamed and a plain call are answered with the same body. A stream can be
written event by event, `gap` seconds apart, or held after its first
`hold_after` events until `release` is set; a client that hangs up meanwhile is
seen at once and recorded in `hung_up`.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests import responses_wire
from tests.streams import is_chat_body, is_messages_body, sse_events

RECORDED = Path(__file__).resolve().parents[1] / "recordings"
"""Recorded real API exchanges (see its README); only rows not suspect_synthetic are evidence."""

CORPUS_VARIABLE = "TURNKEEPER_REAL_RESPONSES"
"""Names a larger folder of recordings, laid out like `RECORDED`, for the corpus sweeps."""


def corpus() -> Path:
    """The larger corpus named by `TURNKEEPER_REAL_RESPONSES`; skips the test when it is unset."""
    import pytest

    folder = os.environ.get(CORPUS_VARIABLE)
    if not folder:
        pytest.skip(f"{CORPUS_VARIABLE} is not set: the larger corpus of recordings is not here")
    if not (Path(folder) / "index.json").is_file():
        pytest.fail(f"{CORPUS_VARIABLE}={folder} has no index.json")
    return Path(folder)


@dataclass(frozen=True)
class Canned:
    """One HTTP response to send."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    """Close the connection after this many body bytes (Content-Length still promises all)."""
    hold: bool = False
    """Send the headers, then hold the body back until the server closes."""
    gate: threading.Event | None = None
    """Answer only once this is set (the request is recorded at once)."""
    hang: bool = False
    """Read the request, then send nothing at all until the server closes."""
    echo: bool = False
    """Fill `{header-name}` fields of the body from the request's headers (an error body
    that quotes the request's `x-api-key` or `Authorization`, as some servers' do)."""
    gap: float = 0.0
    """Seconds between the events of a stream (written one by one when not 0)."""
    hold_after: int | None = None
    """Write this many events of a stream, then hold the rest until `release` is set (or,
    without one, until the server closes)."""
    release: threading.Event | None = None

    def body_for(self, headers: Mapping[str, str]) -> bytes:
        if not self.echo:
            return self.body
        body = self.body
        for name, value in headers.items():
            body = body.replace(f"{{{name}}}".encode(), value.encode("latin-1"))
        return body


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None, **how: Any
) -> Canned:
    data = json.dumps(body).encode()
    return Canned(status, data, {"content-type": "application/json", **(headers or {})}, **how)


def sse_response(text: str, headers: Mapping[str, str] | None = None) -> Canned:
    return Canned(200, text.encode(), {"content-type": "text/event-stream", **(headers or {})})


def recording(name: str, folder: Path = RECORDED) -> dict[str, Any]:
    """One recorded interaction; refuses hand-made ones."""
    data: dict[str, Any] = json.loads((folder / name).read_text("utf-8"))
    assert data["provenance"]["suspect_synthetic"] is False, f"{name} is not real wire data"
    return data


def replayed(name: str, folder: Path = RECORDED, **headers: str) -> Canned:
    """A recorded response as the server sent it: raw SSE, or the JSON body."""
    response = recording(name, folder)["response"]
    recorded_headers = {k: v[0] for k, v in response.get("headers", {}).items() if k in KEPT}
    if response.get("sse_text") or response.get("events"):
        return sse_response(sse_text(response), {**recorded_headers, **headers})
    return json_response(
        response["body"], response.get("status") or 200, recorded_headers | headers
    )


KEPT = ("request-id", "x-request-id", "retry-after", "content-type")


class WireServer:
    """Replays `Canned` responses in order; `requests` holds every request received."""

    def __init__(self, responses: Iterable[Canned] = ()) -> None:
        self.responses: deque[Canned] = deque(responses)
        self.requests: list[Received] = []
        self.streams: list[int] = []
        """The requests (their positions in `requests`) answered with an event stream."""
        self.hung_up: list[int] = []
        """The requests whose client closed the connection while their stream was written."""
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, *responses: Canned) -> None:
        self.responses.extend(responses)

    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the wire server did not start")

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve(self) -> None:
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for writer in self._writers:
                writer.close()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.append(writer)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {
            k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:] if h)
        }
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        request = Received(method, path, headers, json.loads(raw) if raw else None)
        self.requests.append(request)
        canned = self.responses.popleft() if self.responses else _exhausted()
        if isinstance(request.body, dict) and request.body.get("stream") is True:
            canned = as_stream(canned)
        if canned.gate is not None:
            await asyncio.to_thread(canned.gate.wait, 60)
        if canned.hang:
            return await self._held()
        status_line = f"HTTP/1.1 {canned.status} X\r\n"
        body = canned.body_for(headers)
        fields = {**canned.headers, "content-length": str(len(body))}
        writer.write((status_line + "".join(f"{k}: {v}\r\n" for k, v in fields.items())).encode())
        writer.write(b"\r\n")
        await writer.drain()
        number = len(self.requests) - 1
        if fields.get("content-type", "").startswith("text/event-stream"):
            self.streams.append(number)
        if canned.hold:
            return await self._held()
        if canned.cut_after is not None:
            writer.write(body[: canned.cut_after])
            await writer.drain()
            return False
        if canned.gap or canned.hold_after is not None:
            return await self._stream(reader, writer, canned, number)
        writer.write(body)
        await writer.drain()
        return True

    async def _stream(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        canned: Canned,
        number: int,
    ) -> bool:
        """Write a stream event by event, pausing as `canned` says; stop when the client
        hangs up (recorded in `hung_up`) or the server closes."""
        hang_up = asyncio.ensure_future(reader.read(1))  # b"": the client closed
        try:
            for n, event in enumerate(events_of(canned.body)):
                pause = self._pause(canned, n)
                if pause is not None:
                    waiting = asyncio.ensure_future(pause)
                    await asyncio.wait({waiting, hang_up}, return_when=asyncio.FIRST_COMPLETED)
                    waiting.cancel()
                    if self._stop is not None and self._stop.is_set():
                        return False
                    if hang_up.done():
                        self.hung_up.append(number)
                        return False
                writer.write(event)
                await writer.drain()
            return True
        finally:
            hang_up.cancel()

    def _pause(self, canned: Canned, n: int) -> Any:
        """What to wait for before event `n`: the release, the gap, or nothing."""
        if n and n == canned.hold_after:
            return self._released(canned.release)
        if n and canned.gap:
            return asyncio.sleep(canned.gap)
        return None

    async def _released(self, release: threading.Event | None) -> None:
        """Until `release` (set by the test, from its own thread) or the server's close."""
        assert self._stop is not None
        released = release.is_set if release is not None else lambda: False
        # a thread's Event, polled so that a client hanging up can cut the wait short
        while not (released() or self._stop.is_set()):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    async def _held(self) -> bool:
        """Keep the connection open, silent, until the server closes; then close it."""
        assert self._stop is not None
        await asyncio.wait_for(self._stop.wait(), 60)
        return False


def as_stream(canned: Canned) -> Canned:
    """The event stream of a whole 200 body a streaming request is answered with (as the
    API would have streamed it); any other answer as it is."""
    if canned.status != 200 or canned.echo:
        return canned
    try:
        body = json.loads(canned.body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return canned
    if responses_wire.is_responses_body(body):
        data = "".join(responses_wire.sse(body)).encode()
    elif is_messages_body(body) or is_chat_body(body):
        data = "".join(sse_events(body)).encode()
    else:
        return canned
    headers = {**canned.headers, "content-type": "text/event-stream"}
    return replace(canned, body=data, headers=headers)


def events_of(body: bytes) -> list[bytes]:
    """A stream's events, each with the blank line that ends it."""
    return [event + b"\n\n" for event in body.split(b"\n\n") if event.strip()]


def _exhausted() -> Canned:
    error = {"type": "error", "error": {"type": "test_error", "message": "no recorded response"}}
    return json_response(error, 418)


@contextmanager
def serving(*responses: Canned) -> Iterator[WireServer]:
    server = WireServer(responses)
    server.start()
    try:
        yield server
    finally:
        server.close()


def sse_text(response: Mapping[str, Any]) -> str:
    """A recorded stream as SSE text: raw when recorded raw, else rebuilt from its events.

    vercel/ai's chunk files lost their `event:` lines; each is rebuilt from the
    event's own `type`, which is what the API sends there. Its Chat Completions
    chunk files (events without a `type`) have none, and lost the `data: [DONE]`
    that ends the stream, which its fixture writer filters out: rebuilt last.
    """
    if response.get("sse_text"):
        return str(response["sse_text"])
    if not any("type" in e["data"] for e in response["events"]):
        chunks = "".join(f"data: {json.dumps(e['data'])}\n\n" for e in response["events"])
        return chunks + "data: [DONE]\n\n"
    return "".join(
        f"event: {e['data']['type']}\ndata: {json.dumps(e['data'])}\n\n" for e in response["events"]
    )


def streamed(name: str, folder: Path = RECORDED, **headers: str) -> Canned:
    return sse_response(sse_text(recording(name, folder)["response"]), headers)


def real_rows(provider: str, api: str, *, streaming: bool, folder: Path = RECORDED) -> list[str]:
    """Files of the recorded interactions that are real (not suspect_synthetic) and complete."""
    rows = json.loads((folder / "index.json").read_text("utf-8"))["interactions"]
    return [
        r["file"]
        for r in rows
        if not r["suspect_synthetic"]
        and r["provider"] == provider
        and r["api"] == api
        and r["streaming"] == streaming
        and r["kind"] != "error"
    ]
