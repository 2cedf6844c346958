"""The HTTP API (Starlette): `create_app(store, queue)`."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..queue import Queue
from ..store import Store
from . import metrics
from .errors import (
    ApiError,
    api_error,
    http_error,
    server_error,
    store_unavailable,
    store_unavailable_errors,
)
from .limits import MAX_BODY, BodyLimit
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


def create_app(store: Store, queue: Queue, *, max_body: int = MAX_BODY) -> Starlette:
    routes = Routes(store, queue)
    return Starlette(
        routes=[
            Route("/", index),
            Route("/openapi.json", openapi),
            Route("/metrics", metrics.endpoint(store)),
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
            **dict.fromkeys(store_unavailable_errors(), store_unavailable),
            Exception: server_error,
        },
    )


__all__ = ["create_app"]
