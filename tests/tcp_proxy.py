"""A TCP proxy a test puts between a process and PostgreSQL, to cut the database off.

    with TcpProxy("127.0.0.1", 5432) as proxy:   # forwards 127.0.0.1:proxy.port
        proxy.cut()       # drop every connection and stop listening: connects are refused
        proxy.restore()   # listen again on the same port

It runs its own event loop in a thread, so a test's loop (or a blocking test)
never stalls the bytes it forwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tests.test_server import free_port

T = TypeVar("T")


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self.accepted = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def url(self, url: str) -> str:
        """`url` (a libpq URL on the target) with its host and port this proxy's."""
        host, port = self.target
        return url.replace(f"{host}:{port}", f"127.0.0.1:{self.port}", 1)

    def cut(self) -> None:
        """Stop listening (connects are refused) and drop every connection forwarded."""
        self._call(self._cut)

    def restore(self) -> None:
        """Listen again: new connections are forwarded."""
        self._call(self._listen)

    def _call(self, work: Callable[[], Awaitable[T]]) -> T:
        async def run() -> T:
            return await work()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._forward, "127.0.0.1", self.port, reuse_address=True
            )

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()  # a reset, as when a network or a server goes away
        self._writers.clear()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            upstream_reader, upstream = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, upstream}
        await asyncio.gather(
            _pipe(reader, upstream), _pipe(upstream_reader, writer), return_exceptions=True
        )
        for end in (writer, upstream):
            self._writers.discard(end)
            end.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()
