"""A streamed Messages API response folded back into the body the API would have sent.

Pure functions over the raw server-sent events, no SDK types: the SDK's own
accumulated message drops what it has no model for (the `input` of an
`mcp_tool_use`, a `compaction` block's content, blocks of new types), and the
history must keep every field. Each block starts as `content_block_start` gave
it; deltas extend the field they name; the `message_delta` sets the stop
reason, its details and the final usage.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ..errors import ProviderFailed, ProviderUnavailable
from . import messages_api

# Delta type -> the block field it extends (strings append, anything else replaces).
DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "compaction_delta": "content",
}


class MessageFold:
    """Feed it the stream's events in order; `body()` is the complete response body."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self._json: dict[int, str] = {}
        self.stopped = False

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "error":
            raise messages_api.error_from_body(event)
        if kind == "message_start":
            self.message = dict(event["message"])
            self.message["content"] = list(self.message.get("content") or [])
        elif kind == "message_stop":
            self.stopped = True
        elif kind in ("content_block_start", "content_block_delta", "content_block_stop"):
            self._block_event(kind, event)
        elif kind == "message_delta":
            self._message_delta(event)

    def _content(self) -> list[dict[str, Any]]:
        if self.message is None:
            raise ProviderFailed("the stream sent content before message_start")
        content: list[dict[str, Any]] = self.message["content"]
        return content

    def _block_event(self, kind: str, event: dict[str, Any]) -> None:
        content, index = self._content(), event.get("index")
        if kind == "content_block_start":
            content.append(dict(event["content_block"]))
            return
        if not isinstance(index, int) or not 0 <= index < len(content):
            raise ProviderFailed(f"the stream sent {kind} for a block it never started")
        if kind == "content_block_delta":
            self._delta(index, content[index], event.get("delta") or {})
        elif self._json.get(index):
            content[index]["input"] = json.loads(self._json.pop(index))

    def _delta(self, index: int, block: dict[str, Any], delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + str(delta.get("partial_json", ""))
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        elif kind in DELTA_FIELDS:
            _extend(block, DELTA_FIELDS[kind], delta.get(DELTA_FIELDS[kind]))
        else:
            for key, value in delta.items():
                if key != "type":
                    _extend(block, key, value)

    def _message_delta(self, event: dict[str, Any]) -> None:
        if self.message is None:
            raise ProviderFailed("the stream sent message_delta before message_start")
        self.message.update(event.get("delta") or {})
        usage = event.get("usage")
        if isinstance(usage, dict):
            totals = self.message.get("usage")
            totals = dict(totals) if isinstance(totals, dict) else {}
            totals.update({k: v for k, v in usage.items() if v is not None})
            self.message["usage"] = totals

    def body(self) -> dict[str, Any]:
        """The folded response body; `ProviderUnavailable` if the stream was cut short."""
        if self.message is None or not self.stopped:
            raise ProviderUnavailable("the response stream ended before message_stop")
        return self.message


def _extend(block: dict[str, Any], key: str, value: Any) -> None:
    current = block.get(key)
    if isinstance(value, str) and isinstance(current, str) and key != "signature":
        block[key] = current + value
    else:
        block[key] = value


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON `data` of each server-sent event, in order (multi-line data joined)."""
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            yield _json_event("\n".join(data))
            data = []
    if data:
        yield _json_event("\n".join(data))


def _json_event(text: str) -> dict[str, Any]:
    try:
        event = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProviderFailed(f"a stream event is not JSON: {e}") from e
    if not isinstance(event, dict):
        raise ProviderFailed("a stream event is not a JSON object")
    return event
