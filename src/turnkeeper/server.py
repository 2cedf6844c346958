"""The processes behind `turnkeeper serve` and `turnkeeper worker`.

serve            HTTP API + embedded queue (asyncio tasks) + sweeper, one process
serve --no-worker  HTTP API + sweeper; turns deferred on procrastinate
worker           procrastinate worker + sweeper, on the same PostgreSQL database

Each says what it runs in one block when it is ready (`banner`). On SIGINT or
SIGTERM, `serve` and `worker` stop taking turns, give the running ones
`Settings.grace` seconds to finish (`serve` keeps answering polls meanwhile),
then finalise the rest through `failed()` before they exit; a second SIGINT to
`serve` ends its grace period at once (the worker's is procrastinate's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from . import __version__
from .budget import DEFAULT_DEADLINE
from .credentials import redact_url
from .errors import ConfigError, MissingExtra
from .instruments import Watchers, default_watchers
from .job import DEFAULT_LEASE, TurnJob
from .metrics import Metrics, serve_metrics
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


DEFAULT_GRACE = 10.0


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
    metrics_port: int | None = None
    """`worker` serves `/metrics` on this port (serve has it on its own port)."""
    log_format: str = "text"
    """`text` or `json` (`--log-format`): how the banner is written, like the log."""
    grace: float = DEFAULT_GRACE
    """Seconds running turns get to finish on SIGINT or SIGTERM before they are finalised."""
    root: Path = DEMO_ROOT
    """Where `read_file` reads (for the banner; the toolset is built by the caller)."""
    mcp: Sequence[str] = ()
    """The MCP servers' commands and URLs (for the banner)."""
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
    try:
        import uvicorn

        from .api import create_app
    except ImportError as e:
        raise MissingExtra("turnkeeper serve", "server") from e

    if not settings.worker:
        require_postgres(settings.database, "serve --no-worker")
    metrics = Metrics()
    async with _resources(settings, provider, toolset) as (store, tools):
        job = TurnJob(store, provider, tools, lease=settings.lease, watcher=watchers(metrics))
        async with _queue(settings, job) as queue, _sweeping(store, settings, metrics):
            app = create_app(store, queue, cors_origins=settings.cors_origins, metrics=metrics)
            # log_config=None: uvicorn's records go through the process's handlers, so
            # they are redacted and, with --log-format json, JSON lines like the rest.
            config = uvicorn.Config(
                app, host=settings.host, port=settings.port, lifespan="off", log_config=None
            )
            server = _GracefulServer(config, queue, settings.grace)
            announce(banner("serve", settings, provider), settings.log_format)
            await server.serve()


async def work(
    settings: Settings, provider: Provider, toolset: CombinedToolset | None = None
) -> None:
    """Run deferred turns from the PostgreSQL queue until SIGINT or SIGTERM."""
    require_postgres(settings.database, "turnkeeper worker")
    from .worker import run_worker

    metrics = Metrics()
    async with (
        _resources(settings, provider, toolset) as (store, tools),
        _exposed(metrics, settings.metrics_port),
    ):
        job = TurnJob(store, provider, tools, lease=settings.lease, watcher=watchers(metrics))
        sweeper = Sweeper(store, interval=settings.sweep_interval, metrics=metrics)
        announce(banner("worker", settings, provider), settings.log_format)
        await run_worker(
            settings.database,
            job,
            concurrency=settings.concurrency,
            sweeper=sweeper,
            grace=settings.grace,
        )


def banner(command: str, settings: Settings, provider: Provider) -> list[str]:
    """What a serving process runs, one line per setting, the password left out."""
    described = provider.describe()
    model = f"{described.get('provider')} {described.get('model')}"
    if described.get("provider") == "demo":
        model = "demo (offline; answers the todo-list question from the demo folder)"
    if described.get("base_url"):
        model += f" at {described['base_url']}"
    if settings.worker and command == "serve":
        mode = f"embedded (turns run in this process, {settings.concurrency} at once)"
    elif command == "serve":
        mode = "distributed (turns queued for `turnkeeper worker` processes)"
    else:
        mode = f"distributed worker ({settings.concurrency} turns at once)"
    address = f"http://{settings.host}:{settings.port}" if command == "serve" else "none (worker)"
    rows = {
        "address": address,
        "mode": mode,
        "model": model,
        "database": redact_url(settings.database),
        "read_file": str(settings.root)
        + (" (the demo folder)" if settings.root == DEMO_ROOT else ""),
        "MCP servers": ", ".join(settings.mcp) or "none",
        "lease": f"{settings.lease:g} s",
        "deadline": f"{DEFAULT_DEADLINE:g} s per turn; {settings.grace:g} s grace on shutdown",
    }
    return [f"turnkeeper {__version__} {command}"] + [f"  {k:<12} {v}" for k, v in rows.items()]


def announce(lines: Sequence[str], log_format: str = "text") -> None:
    """The banner on stderr; with JSON logs, one JSON log record like every other line."""
    if log_format == "json":
        logger.info("\n".join(lines))
    else:
        print("\n".join(lines), file=sys.stderr, flush=True)


class _GracefulServer:
    """uvicorn's server, stopped only once the queue has drained.

    The first SIGINT or SIGTERM starts the drain while the API keeps answering;
    a second SIGINT cuts the grace period short. uvicorn then shuts down.
    """

    def __init__(self, config: Any, queue: Queue, grace: float) -> None:
        import uvicorn

        server = self.server = uvicorn.Server(config)
        server.handle_exit = self.handle_exit  # type: ignore[method-assign]
        self.queue = queue
        self.grace = grace
        self.draining: asyncio.Task[None] | None = None
        self.hurried: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()

    async def serve(self) -> None:
        await self.server.serve()
        if self.draining is not None:
            await self.draining

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """A signal handler: runs between bytecodes of the loop's thread."""
        self.loop.call_soon_threadsafe(self._stop, sig)

    def _stop(self, sig: int) -> None:
        if self.draining is None:
            logger.info(
                "%s: stopping; running turns get %g s", signal.Signals(sig).name, self.grace
            )
            self.draining = asyncio.create_task(self._drain(self.grace))
        elif sig == signal.SIGINT and isinstance(self.queue, LocalQueue):
            logger.info("SIGINT again: finalising running turns now")
            self.hurried = asyncio.create_task(self.queue.close())

    async def _drain(self, grace: float) -> None:
        if isinstance(self.queue, LocalQueue):
            await self.queue.drain(grace)
        self.server.should_exit = True


def watchers(metrics: Metrics) -> Watchers:
    """What watches a serving process's turns: its metrics, and spans if tracing is set up."""
    return Watchers([metrics, *default_watchers().watchers])


@contextlib.asynccontextmanager
async def _exposed(metrics: Metrics, port: int | None) -> AsyncIterator[None]:
    """`/metrics` on `port` (all interfaces) while the body runs; nothing if no port."""
    if port is None:
        yield
        return
    try:
        server, _ = serve_metrics(metrics, port, host="0.0.0.0")
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on port {port}: {e.strerror}") from e
    logger.info("metrics at http://0.0.0.0:%d/metrics", port)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


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
async def _sweeping(store: Store, settings: Settings, metrics: Metrics) -> AsyncIterator[None]:
    sweeper = Sweeper(store, interval=settings.sweep_interval, metrics=metrics)
    task = asyncio.create_task(sweeper.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
