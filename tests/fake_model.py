"""A model server the test controls, and the test-only provider that calls it over HTTP.

`FakeModelServer` listens on 127.0.0.1 and answers each POST with the next
scripted Messages API body. It counts requests, so a test can tell that a turn
was never sent to the model twice, and `HOLD` makes it keep a request open
until the test releases it: "the worker is in the middle of a model call".
Tools in a worker process report to `/tool-started` before they block.

A request whose client hung up before the server read it (a call a Stop
aborted, read late on a busy machine) is kept apart in `abandoned` and takes
nothing from the script: the next test's script is not the stopped turn's.

A script entry may be a function of the request's headers (lower-cased) that returns
the body: a model server that echoes what it was sent.

A request that asks for `stream: true` (the Anthropic adapter streams by
default) is answered with the event stream of the same scripted body
(`tests/streams.py`), `gap` seconds between its events; a client that hangs up
mid-stream ends it.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
from bench.local_server import LocalServer

from tests.streams import sse_events
from turnkeeper.providers import TextSink, messages_api
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec

HOLD = "hold"
"""A script entry: keep this request open until `release()`, then answer the next entry."""
HOLD_BOUND = 60.0
"""Seconds a held request waits for `release()` at most."""


class FakeModelServer(LocalServer):
    def __init__(self, script: Sequence[Any], *, gap: float = 0.0) -> None:
        self.script = list(script)
        self.gap = gap
        """Seconds between the events of a streamed answer."""
        self.requests: list[Any] = []
        self.streamed = 0
        """How many answers were sent as event streams."""
        self.tool_starts: list[str] = []
        self.abandoned: list[Any] = []
        self.released = threading.Event()
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        super().__exit__(*exc)

    def release(self) -> None:
        self.released.set()

    def _answer(self, path: str, payload: Any, headers: dict[str, str] | None = None) -> Any:
        if path == "/tool-started":
            with self._lock:
                self.tool_starts.append(str(payload.get("tool")))
            return {}
        with self._lock:
            self.requests.append(payload)
            # A held call answers from the script and release it was given, so a test
            # that re-scripts the server (`answering`) is never answered by a late one.
            script, released = self.script, self.released
            entry = script.pop(0) if script else None
        if entry == HOLD:
            released.wait(HOLD_BOUND)
            with self._lock:
                entry = script.pop(0) if script else None
        if entry is None:
            return {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "no more"},
            }
        if callable(entry):  # an answer made of the request's headers (one that echoes them)
            return entry({k.lower(): v for k, v in (headers or {}).items()})
        return entry

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                payload = json.loads(self.rfile.read(length) or b"{}")
                if hung_up(self.connection):
                    with fake._lock:
                        fake.abandoned.append(payload)
                    return
                answer = fake._answer(self.path, payload, dict(self.headers.items()))
                try:
                    if isinstance(payload, dict) and payload.get("stream") is True:
                        self._stream(answer)
                        return
                    body = json.dumps(answer).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client aborted the call (a Stop) while it was held

            def _stream(self, answer: Any) -> None:
                """The answer's event stream, its end the connection's close (HTTP/1.0)."""
                with fake._lock:
                    fake.streamed += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for n, event in enumerate(sse_events(answer)):
                    if n and fake.gap:
                        time.sleep(fake.gap)
                        if hung_up(self.connection):
                            return
                    self.wfile.write(event.encode())
                    self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def hung_up(connection: socket.socket) -> bool:
    """Whether the client has closed its side of `connection` (its request all read)."""
    readable, _, _ = select.select([connection], [], [], 0)
    if not readable:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class HttpModel:
    """A Provider that posts the history to a `FakeModelServer` (Messages API wire format)."""

    wire = messages_api.WIRE

    def __init__(self, url: str) -> None:
        self.url = url

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(f"{self.url}/v1/messages", json={"messages": history})
        return messages_api.parse_reply(response.json())

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {"provider": "fake-http", "url": self.url}
