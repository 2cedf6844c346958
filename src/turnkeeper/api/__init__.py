"""The HTTP API (Starlette): `create_app(store, queue)`."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..metrics import Metrics
from ..queue import Queue
from ..store import Store
from .errors import ApiError, api_error, http_error, server_error
from .limits import MAX_BODY, BodyLimit
from .metrics import endpoint as exposition
from .openapi import DOCUMENT
from .routes import Routes

PLACEHOLDER = """<!doctype html>
<meta charset="utf-8">
<title>turnkeeper</title>
<p>turnkeeper is running. The API is described at <a href="/openapi.json">/openapi.json</a>.</p>
"""


async def index(request: Request) -> Response:
    return HTMLResponse(PLACEHOLDER)


async def openapi(request: Request) -> Response:
    return JSONResponse(DOCUMENT)


def create_app(
    store: Store, queue: Queue, *, max_body: int = MAX_BODY, metrics: Metrics | None = None
) -> Starlette:
    """The app; `metrics` are the instruments its turns count into (`app.state.metrics`)."""
    routes = Routes(store, queue)
    metrics = metrics or Metrics()
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/openapi.json", openapi),
            Route("/metrics", exposition(store, metrics)),
            Route("/api/conversations", routes.create_conversation, methods=["POST"]),
            Route("/api/conversations/{conversation_id}", routes.conversation),
            Route(
                "/api/conversations/{conversation_id}/turns", routes.create_turn, methods=["POST"]
            ),
            Route("/api/turns/{turn_id}", routes.turn_state),
            Route("/api/turns/{turn_id}/cancel", routes.cancel, methods=["POST"]),
        ],
        middleware=[Middleware(BodyLimit, limit=max_body)],
        exception_handlers={
            ApiError: api_error,
            HTTPException: http_error,
            Exception: server_error,
        },
    )
    app.state.metrics = metrics
    return app


__all__ = ["create_app"]
