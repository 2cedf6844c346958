"""The processes behind `turnkeeper serve` and `turnkeeper worker`.

serve            HTTP API + embedded queue (asyncio tasks) + sweeper, one process
serve --no-worker  HTTP API + sweeper; turns deferred on procrastinate
worker           procrastinate worker + sweeper, on the same PostgreSQL database
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError
from .job import DEFAULT_LEASE, TurnJob
from .providers import Provider
from .queue import LocalQueue, Queue
from .store import DEFAULT_URL, Store, open_store, parse_url
from .sweeper import Sweeper
from .tools import CombinedToolset, Toolset
from .tools.files import read_file_tool
from .tools.functions import FunctionToolset

logger = logging.getLogger("turnkeeper.server")

DEMO_ROOT = Path(__file__).resolve().parent / "demo_files"
"""The demo folder turnkeeper ships (`todo.txt`); `read_file` never reads the user's directory."""


def demo_toolset() -> Toolset:
    return FunctionToolset([read_file_tool(DEMO_ROOT)])


@dataclass(frozen=True, slots=True)
class Settings:
    database: str = DEFAULT_URL
    host: str = "127.0.0.1"
    port: int = 8000
    worker: bool = True
    """Run turns in this process (the embedded queue); False only defers them."""
    concurrency: int = 4
    lease: float = DEFAULT_LEASE
    cors_origins: tuple[str, ...] = ()
    """Origins whose pages may call the API (`serve --cors-origin`); none by default."""

    @property
    def sweep_interval(self) -> float:
        return min(5.0, self.lease / 3)


def require_postgres(url: str, what: str) -> None:
    if parse_url(url).scheme != "postgresql":
        raise ConfigError(
            f"{what} needs a PostgreSQL database (--database postgresql://user@host:port/db); "
            "with SQLite, `turnkeeper serve` runs turns itself"
        )


async def serve(
    settings: Settings, provider: Provider, toolset: CombinedToolset | None = None
) -> None:
    """Serve the HTTP API until SIGINT or SIGTERM."""
    import uvicorn

    from .api import create_app

    if not settings.worker:
        require_postgres(settings.database, "serve --no-worker")
    async with _resources(settings, provider, toolset) as (store, tools):
        job = TurnJob(store, provider, tools, lease=settings.lease)
        async with _queue(settings, job) as queue, _sweeping(store, settings):
            app = create_app(store, queue, cors_origins=settings.cors_origins)
            config = uvicorn.Config(app, host=settings.host, port=settings.port, lifespan="off")
            await uvicorn.Server(config).serve()


async def work(
    settings: Settings, provider: Provider, toolset: CombinedToolset | None = None
) -> None:
    """Run deferred turns from the PostgreSQL queue until SIGINT or SIGTERM."""
    require_postgres(settings.database, "turnkeeper worker")
    from .worker import run_worker

    async with _resources(settings, provider, toolset) as (store, tools):
        job = TurnJob(store, provider, tools, lease=settings.lease)
        sweeper = Sweeper(store, interval=settings.sweep_interval)
        await run_worker(settings.database, job, concurrency=settings.concurrency, sweeper=sweeper)


@contextlib.asynccontextmanager
async def _resources(
    settings: Settings, provider: Provider, toolset: CombinedToolset | None
) -> AsyncIterator[tuple[Store, Toolset]]:
    """The store, and the tools (MCP servers connected) for the process's lifetime;
    the provider's connections are closed at the end."""
    tools = toolset or CombinedToolset(demo_toolset())
    try:
        async with tools:
            await tools.list_tools()  # a name clash is a configuration error: say so now
            store = await open_store(settings.database)
            try:
                yield store, tools
            finally:
                await store.close()
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()


@contextlib.asynccontextmanager
async def _queue(settings: Settings, job: TurnJob) -> AsyncIterator[Queue]:
    if settings.worker:
        local = LocalQueue(job, concurrency=settings.concurrency)
        for turn_id in await job.store.queued():  # left queued when the process last stopped
            await local.enqueue(turn_id)
        try:
            yield local
        finally:
            await local.close()
    else:
        from .worker import ProcrastinateQueue

        async with ProcrastinateQueue(settings.database) as deferred:
            yield deferred


@contextlib.asynccontextmanager
async def _sweeping(store: Store, settings: Settings) -> AsyncIterator[None]:
    task = asyncio.create_task(Sweeper(store, interval=settings.sweep_interval).run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
