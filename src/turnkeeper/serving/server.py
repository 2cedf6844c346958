"""The processes behind `turnkeeper serve` and `turnkeeper worker`, and a mounted assistant.

serve [APP]              HTTP API + embedded queue (asyncio tasks) + sweeper, one process
serve [APP] --no-worker  HTTP API + sweeper; turns deferred on procrastinate
worker [APP]             procrastinate worker + sweeper, on the same PostgreSQL database

Every one runs an `Assistant` (the demo assistant without APP): its tools, its
instructions and captions, the same in each process. `running()` is what they
share with `Assistant.asgi()`: the store, the tools, the job, the queue and the
sweeper, for a process's lifetime.

Each says what it runs in one block when it is ready (`banner`). On SIGINT or
SIGTERM, `serve` and `worker` stop taking turns, give the running ones
`Settings.grace` seconds to finish (`serve` keeps answering polls meanwhile),
then finalise the rest through `lifecycle.fail()` before they exit; a second SIGINT to
`serve` ends its grace period at once (the worker's is procrastinate's).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..credentials import redact_url
from ..errors import ConfigError, MissingExtra
from ..observe.metrics import Metrics, serve_metrics
from ..observe.watchers import Watchers, default_watchers
from ..providers import Provider
from ..providers.select import OFFLINE
from ..service.job import TurnJob
from ..service.queue import LocalQueue, Queue
from ..service.sweeper import Holding, Sweeper
from ..store import Store, open_store, parse_url
from ..tools import CombinedToolset
from ..tools.files import DEMO_ROOT
from .owners import tell_owners
from .settings import Settings

if TYPE_CHECKING:
    from ..assistant import Assistant, Authenticate

logger = logging.getLogger("turnkeeper.server")


@dataclass(frozen=True, slots=True)
class Service:
    """What a serving process holds while it runs: the API's side of a running assistant."""

    store: Store
    queue: Queue
    metrics: Metrics


def require_postgres(url: str, what: str, hint: str = "") -> None:
    """`ConfigError` unless `url` is PostgreSQL's: workers elsewhere share only that."""
    if parse_url(url).scheme != "postgresql":
        raise ConfigError(
            f"{what} needs a PostgreSQL database "
            + (
                hint
                or "(--database postgresql://USER@HOST:5432/DBNAME); with SQLite, "
                "`turnkeeper serve` runs turns itself"
            )
        )


async def serve(settings: Settings, assistant: Assistant, provider: Provider) -> None:
    """Serve `assistant`'s widget and API until SIGINT or SIGTERM."""
    try:
        import uvicorn
    except ImportError as e:
        raise MissingExtra("turnkeeper serve", "server") from e

    async with (
        _listening(settings.host, settings.port) as sock,
        running(settings, assistant, provider) as service,
        _exposed(service.metrics, settings.metrics_port, service.store, settings.sweep_interval),
    ):
        app = http_app(service, settings, assistant, assistant.authenticate)
        # log_config=None: uvicorn's records go through the process's handlers, so
        # they are redacted and, with --log-format json, JSON lines like the rest.
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            lifespan="off",
            log_config=None,
            timeout_keep_alive=settings.keep_alive,
        )
        server = _GracefulServer(config, service.queue, settings.grace, app.state.streams.close)
        announce(banner("serve", settings, assistant, provider), settings.log_format)
        await server.serve(sock)


@contextlib.asynccontextmanager
async def _listening(host: str, port: int) -> AsyncIterator[socket.socket]:
    """A socket bound to `host`:`port` for uvicorn, bound before anything is opened or
    announced: a port in use is one line (`ConfigError`), not a banner then uvicorn's error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} is in use on {host}: stop what listens there, "
                "or choose another with --port"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    with sock:
        yield sock


@contextlib.asynccontextmanager
async def running(
    settings: Settings, assistant: Assistant, provider: Provider
) -> AsyncIterator[Service]:
    """The assistant's turns running (embedded) or deferred (`worker=False`), for as long as
    the body runs: the store, its tools connected, the queue, the sweeper."""
    if not settings.worker:
        require_postgres(settings.database, "serving with no worker (serve --no-worker)")
    assistant.check_limits(provider)  # its model is known once chosen where turns run
    metrics = Metrics()
    async with _resources(settings, assistant, provider) as (store, tools):
        job = _job(store, assistant, provider, tools, settings, metrics)
        async with (
            _queue(settings, job) as queue,
            _sweeping(store, settings, queue, metrics, job, assistant),
        ):
            yield Service(store, queue, metrics)


def http_app(
    service: Service, settings: Settings, assistant: Assistant, authenticate: Authenticate | None
) -> Any:
    """The widget and the API of `assistant` over a running `service`: what `serve` serves and
    a mounted app answers with, built in this one place."""
    try:
        from ..api import create_app
    except ImportError as e:
        raise MissingExtra("the HTTP API", "server") from e
    return create_app(
        service.store,
        service.queue,
        name=assistant.name,
        catalogs=assistant.catalogs,
        authenticate=authenticate,
        cors_origins=settings.cors_origins,
        cors_credentials=settings.cors_credentials,
        cors_headers=settings.cors_headers,
        metrics=service.metrics,
        frame_ancestors=settings.frame_ancestors,
        public_metrics=settings.public_metrics,
        limits=assistant.limits,
        owner=assistant.owner,
        fate=assistant.fate,
        max_streams=settings.max_streams,
        max_streams_per_user=settings.max_streams_per_user,
    )


async def work(settings: Settings, assistant: Assistant, provider: Provider) -> None:
    """Run `assistant`'s deferred turns from the PostgreSQL queue until SIGINT or SIGTERM."""
    require_postgres(settings.database, "turnkeeper worker")
    assistant.check_limits(provider)  # its model is known once chosen where turns run
    from ..service.worker import run_worker

    metrics = Metrics()
    async with (
        _resources(settings, assistant, provider) as (store, tools),
        _exposed(metrics, settings.metrics_port),
    ):
        job = _job(store, assistant, provider, tools, settings, metrics)
        sweeper = Sweeper(
            store,
            interval=settings.sweep_interval,
            metrics=metrics,
            lease=settings.lease,
            resuming=job.resuming,
            event_retention=float(assistant.event_retention),
            owner=job.owner,
            unclaimed_after=float(assistant.unclaimed_after),
            unclaimed_timeout=float(assistant.unclaimed_timeout),
        )
        announce(banner("worker", settings, assistant, provider), settings.log_format)
        await run_worker(
            settings.database,
            job,
            concurrency=settings.concurrency,
            sweeper=sweeper,
            grace=settings.grace,
        )


def _job(
    store: Store,
    assistant: Assistant,
    provider: Provider,
    tools: CombinedToolset,
    settings: Settings,
    metrics: Metrics,
) -> TurnJob:
    return TurnJob(
        store,
        provider,
        tools,
        budget=assistant.budget,
        lease=settings.lease,
        activities=assistant.activities,
        watcher=watchers(metrics),
        resuming=assistant.resuming,
        limits=assistant.limits,
        compaction=assistant.compacting,
        instructions=None if isinstance(assistant.instructions, str) else assistant.instructions,
        owner=assistant.owner,
    )


def banner(
    command: str,
    settings: Settings,
    assistant: Assistant,
    provider: Provider,
    *,
    users: bool | None = None,
) -> list[str]:
    """What a serving process runs, one line per setting, the password left out; `users`
    says whether readers sign in (default: whether the assistant has `authenticate`)."""
    rows = banner_rows(command, settings, assistant, provider, users=users)
    return [f"turnkeeper {__version__} {command}"] + [f"  {k:<12} {v}" for k, v in rows.items()]


def banner_rows(
    command: str,
    settings: Settings,
    assistant: Assistant,
    provider: Provider,
    *,
    users: bool | None = None,
) -> dict[str, str]:
    """The banner's settings by name (`banner`)."""
    users = assistant.authenticate is not None if users is None else users
    described = provider.describe()
    model = f"{described.get('provider')} {described.get('model')}"
    if described.get("provider") in OFFLINE:
        model = OFFLINE[described["provider"]][settings.app is None].format_map(described)
    if described.get("base_url"):
        model += f" at {described['base_url']}"
    if settings.worker and command != "worker":
        mode = f"embedded (turns run in this process, {settings.concurrency} at once)"
    elif command != "worker":
        mode = "distributed (turns queued for `turnkeeper worker` processes)"
    else:
        mode = f"distributed worker ({settings.concurrency} turns at once)"
    address = f"http://{settings.host}:{settings.port}" if command == "serve" else "none (worker)"
    rows = {
        "address": address,
        "app": f"{settings.app} ({assistant.name!r})" if settings.app else "the demo assistant",
        "mode": mode,
        "model": model,
        "database": redact_url(settings.database),
        "tools": ", ".join(assistant.tool_names) or "none",
        "MCP servers": ", ".join(settings.mcp) or "none",
        "locales": ", ".join(assistant.catalogs.locales),
        "users": "signed in (authenticate)" if users else "a token per conversation",
        "lease": f"{settings.lease:g} s"
        + ("; a crashed turn resumes" if assistant.resume_after_crash else ""),
        "deadline": f"{assistant.budget.deadline:g} s per turn; {settings.grace:g} s grace "
        "on shutdown",
    }
    if settings.app is None:
        rows["tools"] = f"read_file in {settings.root}" + (
            " (the demo folder)" if settings.root == DEMO_ROOT else ""
        )
    return rows


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

    def __init__(
        self, config: Any, queue: Queue, grace: float, end_streams: Callable[[], None]
    ) -> None:
        import uvicorn

        server = self.server = uvicorn.Server(config)
        server.handle_exit = self.handle_exit  # type: ignore[method-assign]
        self.queue = queue
        self.grace = grace
        self.end_streams = end_streams
        """Ends the open event streams cleanly (their readers resume by cursor)."""
        self.draining: asyncio.Task[None] | None = None
        self.hurried: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()

    async def serve(self, sock: socket.socket) -> None:
        await self.server.serve(sockets=[sock])
        if self.draining is not None:
            await self.draining

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """A signal handler: runs between bytecodes of the loop's thread."""
        self.loop.call_soon_threadsafe(self._stop, sig)

    def _stop(self, sig: int) -> None:
        if self.draining is None:
            idle = isinstance(self.queue, LocalQueue) and not self.queue.running
            said = "stopping; no turn is running" if idle else "stopping"
            logger.info("%s: %s", signal.Signals(sig).name, said)
            self.draining = asyncio.create_task(self._drain(self.grace))
        elif sig == signal.SIGINT and isinstance(self.queue, LocalQueue):
            logger.info("SIGINT again: finalising running turns now")
            self.hurried = asyncio.create_task(self.queue.close())

    async def _drain(self, grace: float) -> None:
        if isinstance(self.queue, LocalQueue):
            await self.queue.drain(grace)
        self.end_streams()
        self.server.should_exit = True


def watchers(metrics: Metrics) -> Watchers:
    """What watches a serving process's turns: its metrics, and spans if tracing is set up."""
    return Watchers([metrics, *default_watchers().watchers])


@contextlib.asynccontextmanager
async def _exposed(
    metrics: Metrics, port: int | None, store: Store | None = None, every: float = 5.0
) -> AsyncIterator[None]:
    """`/metrics` on `port` (all interfaces) while the body runs; nothing if no port. With
    `store`, its counts by status are read into the metrics `every` seconds."""
    if port is None:
        yield
        return
    try:
        server, _ = serve_metrics(metrics, port, host="0.0.0.0")
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on port {port}: {e.strerror}") from e
    logger.info("metrics at http://0.0.0.0:%d/metrics", port)
    counting = None if store is None else asyncio.create_task(_counting(store, metrics, every))
    try:
        yield
    finally:
        if counting is not None:
            counting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await counting
        server.shutdown()
        server.server_close()


async def _counting(store: Store, metrics: Metrics, every: float) -> None:
    """The store's counts into `metrics`, now and every `every` seconds, for a separate port
    (the public `/metrics` reads them as it answers)."""
    failing = False  # a run of failures (the database away) is said once, and its end
    while True:
        try:
            metrics.store_counts(await store.counts())
        except Exception as e:
            if not failing:
                logger.warning("the store's counts could not be read for /metrics: %s", e)
            failing = True
        else:
            if failing:
                logger.info("the store's counts are read for /metrics again")
            failing = False
        await asyncio.sleep(every)


@contextlib.asynccontextmanager
async def _resources(
    settings: Settings, assistant: Assistant, provider: Provider
) -> AsyncIterator[tuple[Store, CombinedToolset]]:
    """The store, and the assistant's tools (MCP servers connected) for the process's
    lifetime; the provider's connections are closed at the end."""
    try:
        async with assistant.toolset() as tools:
            # A name clash, or a caption for a tool nobody offers, is a configuration
            # error: say so now, not at the first turn.
            assistant.check(await tools.list_tools())
            store = await open_store(settings.database)
            try:
                shared = parse_url(settings.database).scheme == "postgresql"
                always = shared or not settings.worker  # workers elsewhere may serve it
                await tell_owners(store, assistant.owner, settings.app, always=always)
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
        mine = None if job.owner is None else job.owner.assistant
        for turn_id in await job.store.queued(assistant=mine):  # left when it last stopped
            await local.enqueue(turn_id)
        try:
            yield local
        finally:
            await local.close()
    else:
        from ..service.worker import ProcrastinateQueue

        async with ProcrastinateQueue(settings.database, job.store) as deferred:
            yield deferred


@contextlib.asynccontextmanager
async def _sweeping(
    store: Store,
    settings: Settings,
    queue: Queue,
    metrics: Metrics,
    job: TurnJob,
    assistant: Assistant,
) -> AsyncIterator[None]:
    holding = queue if isinstance(queue, Holding) else None
    sweeper = Sweeper(
        store,
        interval=settings.sweep_interval,
        queue=holding,
        metrics=metrics,
        lease=settings.lease,
        resuming=job.resuming,
        requeue=queue,
        event_retention=float(assistant.event_retention),
        owner=job.owner,
        unclaimed_after=float(assistant.unclaimed_after),
        unclaimed_timeout=float(assistant.unclaimed_timeout),
    )
    task = asyncio.create_task(sweeper.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
