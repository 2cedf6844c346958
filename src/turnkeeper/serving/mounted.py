"""An assistant mounted in an application of one's own: `Assistant.asgi()`.

    chat = assistant.asgi(database="sqlite:///chat.db", authenticate=signed_in_user)
    app = Starlette(routes=[Mount("/assistant", app=chat)], lifespan=chat.lifespan)

The app is the widget, its files and the API, under whatever prefix it is
mounted at. Its `lifespan` opens what `turnkeeper serve` opens (the store, the
tools, the queue and the sweeper: `server.running`) when the host starts, and
closes it when the host stops, giving running turns their grace first. Until
then, and after, its requests answer `503`. Run alone by an ASGI server
(`uvicorn module:chat`), it takes the server's lifespan events itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.routing import Router
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from ..api.headers import SecurityHeaders, security_headers
from ..service.queue import LocalQueue
from ..store import DEFAULT_URL, parse_url
from .server import banner_rows, http_app, require_postgres, running
from .settings import DEFAULT_GRACE, MAX_STREAMS, MAX_STREAMS_PER_USER, Settings

if TYPE_CHECKING:
    from ..assistant import Assistant, Authenticate

logger = logging.getLogger("turnkeeper.server")

NOT_STARTED = (
    "The assistant is not running: pass its lifespan to your application "
    "(Starlette(..., lifespan=chat.lifespan))."
)


class AssistantApp:
    """An assistant's widget and API as one ASGI app; see the module docstring."""

    def __init__(
        self,
        assistant: Assistant,
        *,
        database: str | None,
        authenticate: Authenticate | None,
        worker: bool,
        concurrency: int,
        cors_origins: tuple[str, ...],
        cors_credentials: bool = False,
        cors_headers: tuple[str, ...] = (),
        grace: float = DEFAULT_GRACE,
        frame_ancestors: tuple[str, ...] = (),
        public_metrics: bool = False,
        max_streams: int = MAX_STREAMS,
        max_streams_per_user: int = MAX_STREAMS_PER_USER,
    ) -> None:
        url = database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
        parse_url(url)
        if not worker:
            require_postgres(
                url,
                "asgi(worker=False)",
                "(database='postgresql://USER@HOST:5432/DBNAME'); with SQLite, leave worker=True "
                "and turns run in your process",
            )
        self.assistant = assistant
        self.authenticate = authenticate
        self.settings = Settings(
            database=url,
            worker=worker,
            concurrency=concurrency,
            app="mounted",
            cors_origins=cors_origins,
            cors_credentials=cors_credentials,
            cors_headers=cors_headers,
            frame_ancestors=frame_ancestors,
            public_metrics=public_metrics,
            max_streams=max_streams,
            max_streams_per_user=max_streams_per_user,
        )
        self.grace = grace
        self._app: ASGIApp | None = None
        self._lifespan_only = Router(lifespan=self.lifespan)
        self._not_started = SecurityHeaders(_not_started, security_headers(frame_ancestors))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan_only(scope, receive, send)
            return
        app = self._app
        if app is not None:
            await app(scope, receive, send)
        elif scope["type"] == "http":
            await self._not_started(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self, host: Any = None) -> AsyncIterator[None]:
        """Run the assistant while the host application runs."""
        assistant = self.assistant
        provider = assistant.choose_provider(os.environ)
        async with running(self.settings, assistant, provider) as service:
            app = self._app = http_app(service, self.settings, assistant, self.authenticate)
            users = self.authenticate is not None
            say(started(banner_rows("mounted", self.settings, assistant, provider, users=users)))
            try:
                yield
            finally:
                self._app = None
                if isinstance(service.queue, LocalQueue):
                    await service.queue.drain(self.grace)
                app.state.streams.close()  # its readers resume by cursor


def started(rows: dict[str, str]) -> str:
    """The banner of a mounted assistant as one line (the host says its own address)."""
    said = "; ".join(f"{k} {v}" for k, v in rows.items() if k != "address")
    return f"turnkeeper {__version__} mounted: {said}"


def say(line: str) -> None:
    """`line` logged at INFO where the host's logging has handlers (it chose what to show);
    else on stderr: under plain `uvicorn host:app` nothing handles `turnkeeper.*` records,
    and the banner would never be seen."""
    if logger.hasHandlers():
        logger.info(line)
    else:
        print(line, file=sys.stderr, flush=True)


async def _not_started(scope: Scope, receive: Receive, send: Send) -> None:
    """Before the host's lifespan has started the assistant, and after it stopped: 503, with
    `retry-after` as every 503 (the security headers are added around it)."""
    answer = JSONResponse({"error": NOT_STARTED}, 503, headers={"retry-after": "1"})
    await answer(scope, receive, send)
