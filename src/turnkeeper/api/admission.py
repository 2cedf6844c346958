"""Who may open one more stream: every streaming endpoint (the REST event stream,
`/api/ag-ui`, `/api/chat`, `/api/chat/{id}/stream`) is wrapped in `Admission`, so one
reader cannot hold the process's connections, file descriptors and memory.

A reader (the signed-in user; without sign-in, the holder of a bearer token) has at
most `per_reader` streams open (`429`), the process at most `most` (`503`), each refusal
with `retry-after`. A request with neither user nor token (a new conversation of a
protocol endpoint, in token mode) counts against the process's cap only. The slot is
taken before the endpoint runs, so a refused request starts no turn, and given back when
its stream ends however it ends: at its last event, a disconnect, a reader cut off for
not reading (stream.py), shutdown; at once if the endpoint answers without a stream.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .errors import ApiError
from .stream import _Response

MAX_STREAMS = 2000
"""Streams one process serves at once, by default (`max_streams`)."""
MAX_STREAMS_PER_USER = 20
"""Streams one user (or token) has open at once, by default (`max_streams_per_user`)."""
RETRY_AFTER = 5
"""Seconds a refused reader waits before trying again."""
KEY = "limits.streams_per_user"
"""The `key` of a `429` for too many streams, beside the door's limits' (door.py)."""
TOO_MANY = "Too many streams are open for this user; close one, or try again shortly."
FULL = "The server has as many streams open as it serves; try again shortly."

Endpoint = Callable[[Request], Awaitable[Response]]


class Admission:
    """The open streams of one app, counted per reader and in all; `admission(endpoint)`
    is the endpoint counted."""

    def __init__(
        self,
        reader: Callable[[Request], Awaitable[str | None]],
        *,
        most: int = MAX_STREAMS,
        per_reader: int = MAX_STREAMS_PER_USER,
    ) -> None:
        if most < 1 or per_reader < 1:
            raise ValueError("max_streams and max_streams_per_user must be 1 or more")
        self.reader = reader
        self.most = most
        self.per_reader = per_reader
        self.open = 0
        """Streams open now (with those whose endpoint is still answering)."""
        self.by_reader: Counter[str] = Counter()

    def __call__(self, endpoint: Endpoint) -> Endpoint:
        async def admitted(request: Request) -> Response:
            try:
                reader = await self.reader(request)
            except ApiError:  # the endpoint answers it (401) in its own shape
                return await endpoint(request)
            refused = self._take(reader)
            if refused is not None:
                return refused
            try:
                response = await endpoint(request)
            except BaseException:
                self._give(reader)
                raise
            if isinstance(response, _Response):
                response.released = lambda: self._give(reader)
            else:
                self._give(reader)
            return response

        return admitted

    def _take(self, reader: str | None) -> Response | None:
        """A slot for `reader`'s stream; else the refusal to answer."""
        if reader is not None and self.by_reader[reader] >= self.per_reader:
            return _refusal(429, TOO_MANY)
        if self.open >= self.most:
            return _refusal(503, FULL)
        self.open += 1
        if reader is not None:
            self.by_reader[reader] += 1
        return None

    def _give(self, reader: str | None) -> None:
        self.open -= 1
        if reader is not None:
            self.by_reader[reader] -= 1
            if self.by_reader[reader] <= 0:
                del self.by_reader[reader]


def _refusal(status: int, message: str) -> Response:
    """`429` in the shape of any limit's (openapi.py's `Limited`), `503` as any other."""
    body: dict[str, str | int] = {"error": message}
    if status == 429:
        body |= {"key": KEY, "retry_after": RETRY_AFTER}
    return JSONResponse(body, status, headers={"retry-after": str(RETRY_AFTER)})
