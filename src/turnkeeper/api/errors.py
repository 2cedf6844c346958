"""Every error the API answers is JSON: `{"error": "<one clear sentence>"}`."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

logger = logging.getLogger("turnkeeper.api")

REASONS = {
    400: "The request is malformed.",
    404: "There is nothing at this address.",
    405: "This method is not allowed at this address.",
    413: "The request body is larger than 1 MiB.",
    415: "The request body must be sent as application/json.",
}


class ApiError(Exception):
    """An error answer: its status and the one sentence the client reads."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error(exc.status, exc.message)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = REASONS.get(exc.status_code, f"The request failed ({exc.status_code}).")
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


async def server_error(request: Request, exc: Exception) -> Response:
    logger.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error(500, "The server failed to answer; the error was logged.")
