"""A real HTTP server for an app, in the test's event loop, and a reader of server-sent
events that keeps every line as it came (ids, types, data and comments)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from tests.waiting import eventually


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def live(app: Any) -> AsyncIterator[str]:
    """`app` served by uvicorn on 127.0.0.1 while the body runs; its base URL."""
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_config=None)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())

    async def started() -> bool:
        assert not task.done(), "the server stopped"
        return bool(server.started)

    await eventually(started, "the server listening", bound=15)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        app.state.streams.close()
        server.should_exit = True
        await asyncio.wait_for(task, 15)


@dataclass
class Sse:
    """One stream as read: its events, its comment lines, and whether it ended by itself."""

    status: int = 0
    content_type: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    ended: bool = False

    @property
    def types(self) -> list[str]:
        return [e["event"] for e in self.events]

    @property
    def ids(self) -> list[int]:
        return [int(e["id"]) for e in self.events]


async def read_stream(
    base: str,
    turn_id: str,
    auth: dict[str, str],
    *,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
    events: int | None = None,
    comments: int | None = None,
    bound: float = 30,
) -> Sse:
    """Read the turn's stream until it ends, or `events` events or `comments` comments came."""
    sse = Sse()
    async with (
        httpx.AsyncClient(base_url=base, timeout=bound) as client,
        asyncio.timeout(bound),
        client.stream(
            "GET", f"/api/turns/{turn_id}/events", headers={**auth, **(headers or {})},
            params=params,
        ) as response,
    ):  # fmt: skip
        sse.status, sse.content_type = response.status_code, response.headers["content-type"]
        if response.status_code != 200:
            await response.aread()
            sse.events.append(response.json())
            return sse
        current: dict[str, Any] = {}
        async for line in response.aiter_lines():
            if line.startswith(":"):
                sse.comments.append(line)
                if comments is not None and len(sse.comments) >= comments:
                    return sse
            elif line == "":
                if current:
                    current["data"] = json.loads(current["data"])
                    sse.events.append(current)
                    current = {}
                    if events is not None and len(sse.events) >= events:
                        return sse
            else:
                name, _, value = line.partition(":")
                current[name] = value[1:] if value.startswith(" ") else value
        sse.ended = True
    return sse
