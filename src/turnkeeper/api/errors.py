"""Every error the API answers is JSON: `{"error": "<one clear sentence>"}`."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .headers import security_headers

logger = logging.getLogger("turnkeeper.api")

REASONS = {
    400: "The request is malformed.",
    404: "There is nothing at this address.",
    405: "This method is not allowed at this address.",
    413: "The request body is larger than 1 MiB.",
    415: "The request body must be sent as application/json.",
}


class ApiError(Exception):
    """An error answer: its status and the one sentence the client reads; `fields` beside
    `error` in its body (a limit's `key`), and `headers` (its `retry-after`)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        fields: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.fields = dict(fields or {})
        self.headers = dict(headers or {})


def error(status: int, message: str) -> JSONResponse:
    """The JSON error answer every `4xx`/`5xx` has: `{"error": message}`."""
    return JSONResponse({"error": message}, status_code=status)


async def api_error(request: Request, exc: Exception) -> Response:
    """An `ApiError` raised by a route, as its answer."""
    assert isinstance(exc, ApiError)
    answer = JSONResponse({"error": exc.message, **exc.fields}, exc.status, headers=exc.headers)
    if exc.status == 503:  # nothing was lost: the client may ask again shortly
        answer.headers["retry-after"] = "1"
    return answer


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own HTTP errors (no such route, method not allowed, …) as one clear sentence."""
    assert isinstance(exc, HTTPException)
    message = REASONS.get(exc.status_code, f"The request failed ({exc.status_code}).")
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


async def server_error(request: Request, exc: Exception) -> Response:
    """Anything a route did not expect: logged with its traceback, answered `500` without
    details."""
    logger.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    # Answered outside the app's middleware (api/headers.py): it carries the headers itself
    # (framing to its own origin only: an error page is nothing to embed).
    answer = JSONResponse(
        {"error": "The server failed to answer; the error was logged."}, status_code=500
    )
    answer.raw_headers.extend(security_headers())
    return answer


UNAVAILABLE = "The store cannot be reached just now; try again shortly."


def store_unavailable_errors() -> tuple[type[Exception], ...]:
    """What the stores raise when the database cannot answer now (connection lost, locked)."""
    kinds: list[type[Exception]] = [sqlite3.OperationalError]
    try:
        import psycopg
    except ImportError:  # pragma: no cover - depends on the installed extras
        return tuple(kinds)
    return (*kinds, psycopg.OperationalError)  # PoolTimeout is one


async def store_unavailable(request: Request, exc: Exception) -> Response:
    """The store cannot answer now: `503` with `retry-after: 1`, logged as a warning."""
    logger.warning("%s %s: the store is unavailable: %s", request.method, request.url.path, exc)
    return JSONResponse({"error": UNAVAILABLE}, status_code=503, headers={"retry-after": "1"})
