"""What the two SDK adapters share: one model call inside its timeout, and whatever
an SDK raises turned into a provider error, in this one place.

Both official SDKs (`anthropic`, `openai`) are generated alike: an error response
raises `APIStatusError`, a failed socket `APIConnectionError`, and a timeout
`APITimeoutError` (a kind of connection error). An adapter names its SDK's
classes and how its API's error bodies read (`SdkErrors`), sends one request, and
hands the JSON body it got to its wire format's `parse_reply`; the clock, the
attempts and the errors are kept here. `SdkProvider` is the part of the
`Provider` interface both adapters answer alike.

A streamed call is the same call: its body is what the stream folds into
(`folded()`), read inside the call's timeout, and whatever breaks the stream
midway (a dropped connection, an error event, a stream that stops short) is the
same `ProviderUnavailable` / `ProviderFailed` as in a plain call. The SDK's
retries end once a response has begun: a stream cut midway is not sent again.

Every timeout is `ProviderUnavailable` with one message (`errors.timed_out`):
the call's own deadline, the SDK's `APITimeoutError`, the HTTP client's
`TimeoutException`, and an attempt the call had no time left to send.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx2

from ..errors import ContextTooLong, ProviderError, ProviderFailed, ProviderUnavailable, timed_out
from ..wire import Message, Reply, ToolResult, ToolSpec, WireFormat
from . import TextSink, sse
from .attempts import Attempts, root_cause

ErrorBody = Callable[[object, int], ProviderError | None]
"""The error an API's error body describes, given the HTTP status; None when it is not one."""


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """The exception classes of one official SDK, and how its API's error bodies read."""

    status_error: type[Exception]
    connection_error: type[Exception]
    timeout_error: type[Exception]
    error_body: ErrorBody


class SdkProvider:
    """A model behind an official SDK's client: `complete()` sends `request()`'s parameters
    with `send()` under the call's timeout; the history's messages are the wire format's."""

    wire: WireFormat
    errors: ClassVar[SdkErrors]
    client: Any
    """The SDK's async client."""
    max_retries: int
    min_attempt: float

    def request(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> dict[str, Any]:
        """The keyword arguments of one call: the adapter's own."""
        raise NotImplementedError

    async def send(self, params: dict[str, Any], on_text: TextSink | None = None) -> Any:
        """One call with these parameters; the response's JSON body (folded from the stream
        when `params` ask for one, the answer's text given to `on_text` as it comes): the
        adapter's own."""
        raise NotImplementedError

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        params = self.request(history, tools, timeout)
        return await complete(
            self.errors,
            lambda: self.send(params, on_text),
            self.wire.parse_reply,
            timeout,
            max_retries=self.max_retries,
            min_attempt=self.min_attempt,
        )

    def summarising(self, model: str | None = None) -> SdkProvider:
        """This provider as it asks for a summary of the earlier conversation: the same
        client, without the assistant's instructions and server tools, with `model` if one
        is named (docs/design.md §2, "Compaction")."""
        other = copy.copy(self)
        changes: dict[str, Any] = {"system": None, "server_tools": [], "mcp_servers": []}
        if model is not None:
            changes["model"] = model
        for name, value in changes.items():
            if hasattr(other, name):
                setattr(other, name, value)
        return other

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self.client.close()

    def user_message(self, text: str) -> Message:
        return self.wire.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return self.wire.tool_results(results)


async def complete(
    errors: SdkErrors,
    send: Callable[[], Awaitable[Any]],
    parse: Callable[[Any], Reply],
    timeout: float,
    *,
    max_retries: int,
    min_attempt: float,
) -> Reply:
    """`parse` of the JSON body `send()` got within `timeout` seconds, or a `ProviderError`.

    The SDK's attempts share the call's clock (`attempts`). The call stops a
    little before its timeout, so that the loop gets this error, naming the
    attempts, rather than cutting the call off itself."""
    with Attempts.opened(timeout, max_retries, min_attempt=min_attempt) as attempts:
        try:
            async with asyncio.timeout(timeout - min(0.25, timeout / 20)):
                body = await send()
        except Exception as e:
            raise provider_error(errors, e, attempts, timeout) from e
        try:
            return parse(body)
        except ProviderError as e:
            raise attempts.error(type(e), str(e)) from e


def json_body(content: bytes) -> Any:
    """A 2xx response's body as JSON, or `ProviderFailed` saying why it cannot be read."""
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProviderFailed(f"the response body is not JSON: {e}") from e


async def folded(response: httpx2.Response, fold: sse.StreamFold) -> Any:
    """The body a streamed response folds into, read as it arrives; the response is closed
    however this ends (a cancel, a Stop, closes its connection at once).

    A server that answers a streaming request with one JSON body (a gateway that ignores
    `stream`) is read as a plain response, its text given to no sink."""
    try:
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith("text/event-stream"):
            return json_body(await response.aread())
        async for data in sse.data(response.aiter_lines()):
            fold.feed(data)
        return fold.body()
    finally:
        await response.aclose()


def provider_error(
    errors: SdkErrors, e: Exception, attempts: Attempts, timeout: float
) -> ProviderError:
    """The turnkeeper error for anything the SDK (or its HTTP client) raised."""
    if isinstance(e, ProviderError):  # the response itself said what went wrong
        return attempts.error(type(e), str(e), status=e.status)
    if isinstance(e, TimeoutError | errors.timeout_error | httpx2.TimeoutException):
        return attempts.error(ProviderUnavailable, timed_out(timeout))
    if isinstance(e, errors.status_error):
        return _from_status(errors, e, attempts)
    if isinstance(e, errors.connection_error | httpx2.TransportError):
        return attempts.error(ProviderUnavailable, f"connection failed: {root_cause(e)}")
    return attempts.error(ProviderFailed, f"{type(e).__name__}: {e}")


def _from_status(errors: SdkErrors, e: Any, attempts: Attempts) -> ProviderError:
    """An `APIStatusError`: the API's own error body when it sent one, else the status."""
    status: int = e.status_code
    described = errors.error_body(e.body, status)
    if isinstance(described, ContextTooLong):  # the loop compacts on this one
        error = attempts.error(ContextTooLong, str(described), status=status)
        error.request_id = e.request_id or error.request_id
        return error
    if described is None:
        message, unavailable = f"HTTP {status}: {e.message}", False
    else:
        message, unavailable = str(described), isinstance(described, ProviderUnavailable)
    return attempts.status_error(message, status, e.request_id, unavailable=unavailable)
