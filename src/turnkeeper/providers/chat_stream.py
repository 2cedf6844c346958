"""A streamed Chat Completions response folded back into the body a plain call returns.

Pure functions over the raw `chat.completion.chunk` data, no SDK types (the
SDK's models drop the keys they do not know: `reasoning_content`, `x_groq`,
`citations`), because the history keeps the assistant message exactly as a
plain call would have given it. The fold gives `object: "chat.completion"`
(for any `chat.completion.*` a chunk names: Perplexity's last is
`chat.completion.done`), and for each choice (by its `index`) a `message` made
of its deltas:

- strings are concatenated (`content`, `refusal`, `reasoning_content`, a tool
  call's `function.name` and `arguments`); a `null` never replaces a value;
- `tool_calls` are merged by their `index` (its position in the chunk when a
  server sends none), which is then dropped: it places a fragment in the
  stream, and OpenAI's plain body has none (it has refused one sent back;
  DeepSeek's and Alibaba's plain bodies do carry it, the one field their
  folded message lacks). A tool call's `id` is its first non-empty one (some
  servers send `""` after it), and `type` and `role` are set, not concatenated;
- other lists (`annotations`, `logprobs.content`) are extended.

Every other field of a chunk or a choice (`id`, `created`, `model`,
`system_fingerprint`, `service_tier`, `finish_reason`, the final `usage`,
vendors' own such as `x_groq`, `citations`, `prompt_filter_results`) is kept,
a later value replacing an earlier one unless it is null or `""` (Azure's first
chunk has an empty `id` and `model`), objects merged key by key. Only
`obfuscation` is dropped: the padding OpenAI adds to each chunk to hide its
length says nothing of the response.

The stream is whole once `data: [DONE]` came, or, from a server that does not
send it, once every choice has its `finish_reason` and the usage has come (with
`stream_options.include_usage` it is the last chunk). Anything else was cut
short: `ProviderUnavailable`, as a dropped connection is. A chunk with an
`error` object is the error it describes, as a plain error body is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ProviderFailed, ProviderUnavailable
from . import chat_api, sse

if TYPE_CHECKING:
    from . import TextSink

DONE = "[DONE]"
"""The data of the event that ends a Chat Completions stream."""
SET = frozenset({"type", "role"})
"""Delta keys whose value is set, not concatenated."""
DROPPED = frozenset({"obfuscation"})
"""Chunk keys no plain body has."""


class ChatFold:
    """Feed it the stream's data in order; `body()` is the complete `chat.completion` body."""

    def __init__(self, on_text: TextSink | None = None) -> None:
        self.fields: dict[str, Any] = {}
        """The body's fields but its choices, as the chunks carried them."""
        self.choices: dict[int, dict[str, Any]] = {}
        self.done = False
        self.on_text = on_text
        """Called with each piece of the first choice's `content` as it is folded in."""

    def feed(self, data: str) -> None:
        """One server-sent event's data (`sse.StreamFold`)."""
        if data.strip() == DONE:
            self.done = True
        else:
            self.add(sse.json_event(data))

    def add(self, chunk: dict[str, Any]) -> None:
        if isinstance(chunk.get("error"), dict):
            raise chat_api.error_from_body(chunk)
        for key, value in chunk.items():
            if key == "choices":
                self.fields.setdefault(key, None)  # its place among the fields; body() fills it
                self._choices(value)
            elif key == "object" and str(value).startswith("chat.completion"):
                self.fields[key] = "chat.completion"
            elif key not in DROPPED:
                _keep(self.fields, key, value)

    def _choices(self, choices: Any) -> None:
        if not isinstance(choices, list):
            raise ProviderFailed("a stream chunk's choices are not a list")
        for choice in choices:
            if not isinstance(choice, dict) or not isinstance(choice.get("index", 0), int):
                raise ProviderFailed("a stream chunk has a choice that is not an object")
            index = choice.get("index", 0)
            folded = self.choices.setdefault(index, {"index": index, "message": {}})
            for key, value in choice.items():
                if key == "delta":
                    self._delta(index, folded["message"], value)
                elif key == "logprobs" and isinstance(value, dict):
                    folded[key] = _merged(folded.get(key) or {}, value)
                elif key != "index":
                    _keep(folded, key, value)

    def _delta(self, index: int, message: dict[str, Any], delta: Any) -> None:
        if not isinstance(delta, dict):
            raise ProviderFailed("a stream chunk has a delta that is not an object")
        _merge(message, delta)
        content = delta.get("content")
        if index == 0 and self.on_text is not None and isinstance(content, str) and content:
            self.on_text(content)

    def body(self) -> dict[str, Any]:
        """The folded body; `ProviderUnavailable` if the stream was cut short."""
        if not (self.done or self._finished()):
            raise ProviderUnavailable("the response stream ended before data: [DONE]")
        if not self.choices:
            raise ProviderFailed("the response stream held no choices")
        return {**self.fields, "choices": [self.choices[i] for i in sorted(self.choices)]}

    def _finished(self) -> bool:
        """Whether a stream without `[DONE]` was whole: every choice done, the usage in."""
        ended = all(c.get("finish_reason") is not None for c in self.choices.values())
        return ended and isinstance(self.fields.get("usage"), dict)


def _keep(fields: dict[str, Any], key: str, value: Any) -> None:
    """A field of a chunk or a choice: a later value replaces, objects merge, null and `""`
    never win."""
    current = fields.get(key)
    if isinstance(current, dict) and isinstance(value, dict):
        merged = dict(current)
        for k, v in value.items():
            _keep(merged, k, v)
        fields[key] = merged
    elif (value is not None and value != "") or key not in fields:
        fields[key] = value


def _merge(into: dict[str, Any], delta: dict[str, Any]) -> None:
    """Fold one delta object into what came before it (the module's rules)."""
    for key, value in delta.items():
        current = into.get(key)
        if key == "tool_calls" and isinstance(value, list):
            into[key] = _tool_calls(current if isinstance(current, list) else [], value)
        elif key == "id":
            if value or key not in into:
                into[key] = current or value
        elif value is None:
            into.setdefault(key, None)
        elif key in SET or current is None:
            into[key] = _copied(value)
        elif isinstance(current, str) and isinstance(value, str):
            into[key] = current + value
        elif isinstance(current, dict) and isinstance(value, dict):
            into[key] = _merged(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            into[key] = current + value
        else:
            into[key] = _copied(value)


def _merged(current: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    merged = dict(current)
    _merge(merged, delta)
    return merged


def _tool_calls(calls: list[dict[str, Any]], deltas: list[Any]) -> list[dict[str, Any]]:
    """Tool call fragments merged by `index` (their position when a server sends none)."""
    calls = list(calls)
    for position, fragment in enumerate(deltas):
        if not isinstance(fragment, dict):
            raise ProviderFailed("a stream chunk has a tool call that is not an object")
        index = fragment.get("index", position)
        if not isinstance(index, int) or not 0 <= index <= len(calls):
            raise ProviderFailed(f"a stream chunk has tool call {index!r} out of order")
        if index == len(calls):
            calls.append({})
        calls[index] = _merged(calls[index], {k: v for k, v in fragment.items() if k != "index"})
    return calls


def _copied(value: Any) -> Any:
    """A fresh container (a later delta extends the fold's copy, never the chunk's own)."""
    if isinstance(value, dict):
        return _merged({}, value)
    if isinstance(value, list):
        return list(value)
    return value
