"""The HTTP attempts of one model call, and the one clock they share.

The loop gives each model call one timeout. The SDKs retry on their own (429,
5xx, connection errors; two retries by default), each attempt with its own
timeout and a sleep in between, so left alone their attempts could take three
times that long. Two httpx event hooks, installed on the SDK's HTTP client,
keep every attempt inside the call:

- before an attempt is sent, its connect/read/write timeouts shrink to the time
  the call has left, and an attempt there is no time for is not sent at all;
- when a retryable error response arrives and the wait before the next attempt
  (the server's `retry-after`, or the SDK's longest backoff) would not leave
  `min_attempt` seconds for it, the response is marked `x-should-retry: false`,
  the header both SDKs obey, so the SDK raises that error at once.

Each attempt's status code and request id are recorded, so an error raised
after the call ran out of time still names the last response the server sent.
The adapters install the hooks with `event_hooks()` and open a call with
`Attempts.opened()`; nothing here imports an SDK.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..budget import Clock, monotonic
from ..errors import ProviderError, ProviderFailed, ProviderUnavailable

if TYPE_CHECKING:
    import httpx2

DEFAULT_MAX_RETRIES = 2
"""The SDKs' own default; the only retries a turn ever gets."""

DEFAULT_MIN_ATTEMPT = 1.0
"""A retry is not started with less than this many seconds left for it."""

LONGEST_BACKOFF = 8.0
"""The SDKs' exponential backoff: 0.5 s doubled per retry, at most 8 s."""

_current: ContextVar[Attempts | None] = ContextVar("turnkeeper_attempts", default=None)


def unavailable_status(status: int | None) -> bool:
    """Whether an HTTP status means "not now" (timeout, rate limit, overload, 5xx)."""
    return status is not None and (status in (408, 429) or status >= 500)


@dataclass
class Attempts:
    """One model call: its deadline, and what each HTTP attempt got back."""

    deadline: float
    max_retries: int
    min_attempt: float = DEFAULT_MIN_ATTEMPT
    clock: Clock = monotonic
    sent: int = 0
    status: int | None = None
    request_id: str | None = None
    statuses: list[int] = field(default_factory=list)
    too_long: float | None = None
    """The server's `retry-after` that the call had no time to wait out, if one was."""

    @classmethod
    @contextmanager
    def opened(
        cls,
        timeout: float,
        max_retries: int,
        *,
        min_attempt: float = DEFAULT_MIN_ATTEMPT,
        clock: Clock = monotonic,
    ) -> Iterator[Attempts]:
        """The attempts of a call starting now, seen by the hooks while the block runs."""
        attempts = cls(clock() + timeout, max_retries, min_attempt, clock)
        token = _current.set(attempts)
        try:
            yield attempts
        finally:
            _current.reset(token)

    def left(self) -> float:
        return self.deadline - self.clock()

    def saw(self, response: httpx2.Response, request_id_header: str) -> None:
        self.status = response.status_code
        self.statuses.append(response.status_code)
        self.request_id = response.headers.get(request_id_header) or self.request_id

    def retry_fits(self, response: httpx2.Response) -> bool:
        """Whether waiting as the SDK would and then trying again fits in the time left."""
        retries_taken = _int(response.request.headers.get("x-stainless-retry-count"))
        if retries_taken >= self.max_retries:
            return True  # the SDK will not retry anyway; leave its decision alone
        asked = retry_after(response.headers)
        wait = min(0.5 * 2.0**retries_taken, LONGEST_BACKOFF) if asked is None else asked
        fits = self.left() - wait >= self.min_attempt
        if not fits and asked is not None:
            self.too_long = asked
        return fits

    def error(
        self, cls: type[ProviderError], message: str, *, status: int | None = None
    ) -> ProviderError:
        """A provider error naming the last response seen and how many attempts were sent."""
        status = status if status is not None else self.status
        attempts = f" ({self.sent} attempts)" if self.sent > 1 else ""
        return cls(message + attempts, status=status, request_id=self.request_id)

    def status_error(
        self, message: str, status: int, request_id: str | None, *, unavailable: bool = False
    ) -> ProviderError:
        """The error for an HTTP error response: unavailable for 408/429/5xx, failed otherwise."""
        cls = ProviderUnavailable if unavailable or unavailable_status(status) else ProviderFailed
        if self.too_long is not None and cls is ProviderUnavailable:
            message += (
                f"; the provider asked to wait {self.too_long:.0f} s before trying again"
                " (retry-after), more than the turn has left"
            )
        error = self.error(cls, message, status=status)
        error.request_id = request_id or error.request_id
        if cls is ProviderUnavailable:
            error.wait = self.too_long
        return error


def root_cause(e: BaseException) -> str:
    """The innermost cause's name and message: what actually went wrong on the socket."""
    while e.__cause__ is not None:
        e = e.__cause__
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def retry_after(headers: httpx2.Headers) -> float | None:
    """The server's wait in seconds (`retry-after-ms`, `retry-after` seconds or date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        seconds = email.utils.mktime_tz(parsed) - time.time()
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def event_hooks(request_id_header: str) -> dict[str, list[Any]]:
    """httpx event hooks that keep an SDK's attempts inside the current call's deadline."""

    async def before(request: httpx2.Request) -> None:
        attempts = _current.get()
        if attempts is None:
            return
        left = attempts.left()
        if left <= 0:
            import httpx2

            raise httpx2.ConnectTimeout("no time left in this model call", request=request)
        attempts.sent += 1
        timeouts = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            k: left if v is None else min(v, left) for k, v in _with_keys(timeouts).items()
        }

    async def after(response: httpx2.Response) -> None:
        attempts = _current.get()
        if attempts is None:
            return
        attempts.saw(response, request_id_header)
        if unavailable_status(response.status_code) and not attempts.retry_fits(response):
            response.headers["x-should-retry"] = "false"

    return {"request": [before], "response": [after]}


def _with_keys(timeouts: dict[str, float | None]) -> dict[str, float | None]:
    return {k: timeouts.get(k) for k in ("connect", "read", "write", "pool")}
