"""A slow model on 127.0.0.1: every Messages API call answers after `delay` seconds.

An asyncio server in a thread of its own, speaking just enough HTTP/1.1
(keep-alive, Content-Length) for the official SDK client, so a thousand calls
can wait at once without a thread each.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from tests import scripts


class SlowModel:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        """The most calls waiting at once."""
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.url = ""

    def __enter__(self) -> SlowModel:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._start(), self.loop)
        self._server = started.result(30)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=2048)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                await reader.readexactly(_content_length(head))
                self.requests += 1
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
                await asyncio.sleep(self.delay)
                self.in_flight -= 1
                writer.write(_response(scripts.answer("all done")))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _content_length(head: bytes) -> int:
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return int(value)
    return 0


def _response(payload: Any) -> bytes:
    body = json.dumps(payload).encode()
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body
