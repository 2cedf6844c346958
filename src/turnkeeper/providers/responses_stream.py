"""A streamed Responses API response folded back into the body a plain call returns.

Pure functions over the raw events, no SDK types: the SDK's `responses.stream()`
helper raises on an `incomplete` stream (a cut answer, which the loop must see as
one) and its models drop item types they do not know; the history keeps every item.

The stream's last event carries the whole response: `response.completed`,
`response.incomplete` or `response.failed` (its `response` is the body, whose
status `responses_api.parse_reply` reads). Each output item is kept as its
`response.output_item.done` gave it, in `output_index` order, and is the body's
`output` when the last event's response has none (a server that leaves it out).
An `error` event is the error it describes. A stream that ends without one of
the three last events was cut short: `ProviderUnavailable`, as a dropped
connection is, never a shorter answer. Unknown events are skipped.

The answer's text leaves the fold as it arrives: `on_text` gets each
`response.output_text.delta`, and a `"\n"` where a second text part starts, so
the pieces join to the `Reply.text` of the folded body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ProviderFailed, ProviderUnavailable
from . import chat_api, sse

if TYPE_CHECKING:
    from . import TextSink

LAST = frozenset({"response.completed", "response.incomplete", "response.failed"})
"""The events that end a whole stream, each with the response as it ended."""


class ResponseFold:
    """Feed it the stream's events in order; `body()` is the complete response body."""

    def __init__(self, on_text: TextSink | None = None) -> None:
        self.response: dict[str, Any] | None = None
        """The response as the last of `LAST` gave it (None until one came)."""
        self.items: dict[int, dict[str, Any]] = {}
        self.on_text = on_text
        """Called with each piece of answer text as it is folded in."""
        self._part: tuple[Any, Any] | None = None
        """The text part the last delta extended: a delta of another one starts a line."""

    def feed(self, data: str) -> None:
        """One server-sent event's data (`sse.StreamFold`)."""
        self.add(sse.json_event(data))

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.output_text.delta":
            self._text(event)
        elif kind == "response.output_item.done":
            self._item(event)
        elif kind in LAST:
            response = event.get("response")
            if not isinstance(response, dict):
                raise ProviderFailed(f"the stream's {kind} has no response object")
            self.response = response
        elif kind == "error":
            raise chat_api.error_from_body(_error_of(event))

    def _item(self, event: dict[str, Any]) -> None:
        index, item = event.get("output_index"), event.get("item")
        if not isinstance(index, int) or not isinstance(item, dict):
            raise ProviderFailed("the stream sent an output item without its index")
        self.items[index] = item

    def _text(self, event: dict[str, Any]) -> None:
        delta = event.get("delta")
        if self.on_text is None or not isinstance(delta, str) or not delta:
            return
        part = (event.get("output_index"), event.get("content_index"))
        if self._part is not None and part != self._part:
            self.on_text("\n")
        self._part = part
        self.on_text(delta)

    def body(self) -> dict[str, Any]:
        """The folded response body; `ProviderUnavailable` if the stream was cut short."""
        if self.response is None:
            raise ProviderUnavailable(
                "the response stream ended before response.completed or response.incomplete"
            )
        output = self.response.get("output")
        if (not isinstance(output, list) or not output) and self.items:
            return {**self.response, "output": [self.items[i] for i in sorted(self.items)]}
        return self.response


def _error_of(event: dict[str, Any]) -> dict[str, Any]:
    """An `error` event as an error body: its `error` object, or its own fields."""
    error = event.get("error")
    if isinstance(error, dict):
        return {"error": error}
    return {"error": {k: v for k, v in event.items() if k in ("code", "message", "param")}}
