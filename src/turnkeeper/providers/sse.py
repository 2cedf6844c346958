"""Server-sent events as both streaming APIs send them: the `data` of each event, in order.

Pure, no SDK types. Only `data:` lines count: `event:` names, `id:`, `retry:` and
comment lines (`: keep-alive`, which some gateways send while a model thinks) are
skipped, since each API's event data names its own type. A fold (`messages_stream`,
`chat_stream`) is fed each event's data and says, once the stream has ended,
whether it was whole.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Protocol

from ..errors import ProviderFailed


class StreamFold(Protocol):
    """Folds one streamed response back into the body a plain call returns."""

    def feed(self, data: str) -> None:
        """One event's data, in order; raise `ProviderError` for an error event."""
        ...

    def body(self) -> dict[str, Any]:
        """The folded body once the stream has ended; `ProviderUnavailable` if it was cut
        short (a dropped stream is the provider's failure, never a shorter answer)."""
        ...


async def data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each event, in order (an event's several `data:` lines joined)."""
    parts: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            parts.append(line[5:].removeprefix(" "))
        elif not line and parts:
            yield "\n".join(parts)
            parts = []
    if parts:
        yield "\n".join(parts)


def json_event(text: str) -> dict[str, Any]:
    """An event's data as the JSON object it must be; `ProviderFailed` if it is not one."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProviderFailed(f"a stream event is not JSON: {e}") from e
    if not isinstance(event, dict):
        raise ProviderFailed("a stream event is not a JSON object")
    return event
