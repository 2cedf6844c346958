"""The HTTP API (Starlette): `create_app(store, queue, assistant=...)`; mounted in an
application of one's own, `Assistant.asgi()` (serving/mounted.py).

Imports the assistant, the service's queue (`service.queue`), the turn's exits
(`turn.lifecycle`: a Stop of a waiting turn, a turn whose enqueue failed), the store
and observing; never `serving` or the command line, which build the app."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..i18n import Catalogs
from ..observe.metrics import Metrics
from ..service.queue import Queue
from ..store import Store
from ..store.records import Fate, Owner
from ..usage import LimitsSetting
from . import widget
from .contract import served
from .controls import Controls
from .errors import (
    ApiError,
    api_error,
    http_error,
    server_error,
    store_unavailable,
    store_unavailable_errors,
)
from .headers import Cors, SecurityHeaders, security_headers
from .limits import MAX_BODY, BodyLimit
from .metrics import endpoint as exposition
from .protocols import CONVERSATION_HEADER, TOKEN_HEADER, TURN_HEADER, Protocols
from .routes import Routes

if TYPE_CHECKING:
    from ..assistant import Authenticate


def openapi(users: bool) -> Callable[[Request], Awaitable[Response]]:
    """`GET /openapi.json`: the OpenAPI document, generated from the models in
    `api/openapi.py`, as this app serves it (`contract.served`: its readers, its prefix)."""

    async def document(request: Request) -> Response:
        return JSONResponse(served(users, str(request.scope.get("root_path", ""))))

    return document


def create_app(
    store: Store,
    queue: Queue,
    *,
    name: str = "Assistant",
    catalogs: Catalogs | None = None,
    authenticate: Authenticate | None = None,
    max_body: int = MAX_BODY,
    cors_origins: Sequence[str] = (),
    cors_credentials: bool = False,
    cors_headers: Sequence[str] = (),
    metrics: Metrics | None = None,
    frame_ancestors: Sequence[str] = (),
    public_metrics: bool = False,
    limits: LimitsSetting = None,
    owner: Owner | None = None,
    fate: Fate | None = None,
) -> Starlette:
    """The API and widget of the assistant `name` (`owner`; its turns queued with `fate`), in
    `catalogs`; with `authenticate`, conversations are users'. Pages of `cors_origins` may
    call it (sending `cors_headers` of their own, and cookies with `cors_credentials`:
    `headers.Cors`), of `frame_ancestors` frame it; `metrics` count its turns
    (public_metrics); the door holds new turns to `limits` (api/door.py)."""
    routes = Routes(store, queue, catalogs=catalogs or Catalogs(), authenticate=authenticate,
                    limits=limits, owner=owner, fate=fate)  # fmt: skip
    cors = Cors(tuple(cors_origins), cors_credentials, tuple(cors_headers))
    metrics = metrics or Metrics()
    app = Starlette(
        routes=_endpoints(routes, metrics, name, public_metrics),
        middleware=_middleware(cors, frame_ancestors, max_body),
        exception_handlers=_handlers(),
    )
    # A trailing slash is not redirected: the redirect would be built from the Host header.
    app.router.redirect_slashes = False
    app.state.metrics, app.state.streams = metrics, routes.streams
    return app


def _endpoints(routes: Routes, metrics: Metrics, name: str, public_metrics: bool) -> list[Route]:
    """The API's routes and the widget's, over `routes` (who opens what, the store, the
    queue); `/metrics` only when public."""
    store, users = routes.store, routes.authenticate is not None
    return [
        # The poll first: most requests are polls, and routes are matched in order.
        Route("/api/turns/{turn_id}", routes.turn_state),
        Route("/api/turns/{turn_id}/events", routes.events),
        Route("/api/turns/{turn_id}/cancel", routes.cancel, methods=["POST"]),
        Route("/api/turns/{turn_id}/approvals", routes.approvals, methods=["POST"]),
        Route("/api/conversations", routes.conversations, methods=["GET", "POST"]),
        Route("/api/conversations/{conversation_id}", routes.conversation),
        Route("/api/conversations/{conversation_id}/turns", routes.create_turn, methods=["POST"]),
        *Protocols(routes).endpoints(),
        Route("/api/usage", routes.usage),
        *Controls(routes, metrics).endpoints(),
        *widget.routes(name, routes.catalogs, users=users),
        Route("/openapi.json", openapi(users)),
        *([Route("/metrics", exposition(store, metrics))] if public_metrics else []),
    ]


def _handlers() -> dict[type[Exception], Any]:
    """Every error as JSON (api/errors.py): a route's, Starlette's, the store's, any other."""
    return {
        ApiError: api_error,
        HTTPException: http_error,
        **dict.fromkeys(store_unavailable_errors(), store_unavailable),
        Exception: server_error,
    }


def _middleware(cors: Cors, frame_ancestors: Sequence[str], max_body: int) -> list[Middleware]:
    return [
        Middleware(SecurityHeaders, headers=security_headers(frame_ancestors)),
        *cors.middleware(exposed=(TOKEN_HEADER, TURN_HEADER, CONVERSATION_HEADER)),
        Middleware(BodyLimit, limit=max_body),
    ]


__all__ = ["create_app"]
