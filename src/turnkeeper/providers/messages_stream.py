"""A streamed Messages API response folded back into the body the API would have sent.

Pure functions over the raw server-sent events, no SDK types: the SDK's own
accumulated message drops what it has no model for (the `input` of an
`mcp_tool_use`, a `compaction` block's content, blocks of new types), and the
history must keep every field. Each block starts as `content_block_start` gave
it; deltas extend the field they name; the `message_delta` sets the stop
reason, its details and the final usage. A stream that ends before
`message_stop` was cut short: `ProviderUnavailable`, as a dropped connection is.

The answer's text leaves the fold as it arrives: `on_text` gets each `text`
block's `text_delta`, and a `"\n"` where a second text block starts, so the
pieces join to the `Reply.text` of the folded body.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..errors import ProviderFailed, ProviderUnavailable
from . import messages_api, sse

if TYPE_CHECKING:
    from . import TextSink

# Delta type -> the block field it extends (strings append, anything else replaces).
DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "compaction_delta": "content",
}


class MessageFold:
    """Feed it the stream's events in order; `body()` is the complete response body."""

    def __init__(self, on_text: TextSink | None = None) -> None:
        self.message: dict[str, Any] | None = None
        self._json: dict[int, str] = {}
        self.stopped = False
        self.on_text = on_text
        """Called with each piece of answer text as it is folded in."""
        self._texts = 0
        """Text blocks started so far: the second and later are joined with a newline."""

    def feed(self, data: str) -> None:
        """One server-sent event's data (`sse.StreamFold`)."""
        self.add(sse.json_event(data))

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
            if content[-1].get("type") == "text":
                self._text_started(content[-1].get("text"))
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
            if kind == "text_delta" and block.get("type") == "text":
                self._text(delta.get("text"))
        else:
            for key, value in delta.items():
                if key != "type":
                    _extend(block, key, value)

    def _text_started(self, text: Any) -> None:
        self._texts += 1
        if self._texts > 1:
            self._text("\n")
        self._text(text)

    def _text(self, piece: Any) -> None:
        if self.on_text is not None and isinstance(piece, str) and piece:
            self.on_text(piece)

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
        block[key] = None  # `current` the one reference: extended in place, not copied
        current += value  # (a long answer's text is not copied once per delta)
        block[key] = current
    else:
        block[key] = value
