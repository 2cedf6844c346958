"""A response body as the event stream its API sends for it, for the fake model servers.

A fake asked for `stream: true` answers with the stream of the very body it
would have sent whole, so a streamed and a plain call can be held to the same
body. The shapes follow the recorded real streams (tests/recordings):

- Messages API: `message_start` with the body's fields but an empty `content`
  and no stop reason; per block a `content_block_start` (text, thinking and a
  tool's input emptied), its deltas (text and thinking in word-sized pieces, a
  tool's input as JSON in two halves, citations one by one, the signature
  whole), `content_block_stop`; then `message_delta` with the stop reason (and
  any stop details) and the usage; `message_stop`. An error body is one
  `error` event.
- Chat Completions: `chat.completion.chunk`s carrying the body's own fields,
  the first delta with the message's fields (content and tool call arguments
  emptied), then the content in word-sized pieces and each tool call's
  arguments in two halves, a last chunk with the finish reason, a usage chunk
  with no choices, and `data: [DONE]`.
"""

from __future__ import annotations

import json
from typing import Any

from turnkeeper.providers.scripted import pieces

MOVED = ("stop_reason", "stop_sequence", "stop_details", "container")
"""Message fields the API sends in `message_delta`, not in `message_start`."""


def is_messages_body(body: Any) -> bool:
    return isinstance(body, dict) and (body.get("type") == "message" or body.get("type") == "error")


def is_chat_body(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("choices"), list)


def sse_events(body: Any) -> list[str]:
    """The server-sent events, each whole (`event:` and `data:` lines), of this body's stream."""
    if is_chat_body(body):
        return [f"data: {json.dumps(c)}\n\n" for c in chat_chunks(body)] + ["data: [DONE]\n\n"]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in messages_events(body)]


def messages_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Messages API events of this body (an error body is its one `error` event)."""
    if body.get("type") == "error":
        return [body]
    start = {**body, "content": []}
    delta = {}
    for key in MOVED:
        if key in body:
            start[key], delta[key] = None, body[key]
    usage = body.get("usage")
    if isinstance(usage, dict):
        start["usage"] = {**usage, "output_tokens": min(1, usage.get("output_tokens") or 0)}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(body["content"]):
        events += block_events(index, block)
    ending: dict[str, Any] = {"type": "message_delta", "delta": delta}
    if isinstance(usage, dict):
        ending["usage"] = usage
    return [*events, ending, {"type": "message_stop"}]


def block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block.get("type")
    opened, deltas = dict(block), list[dict[str, Any]]()
    if kind == "text":
        opened["text"] = ""
        deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        if isinstance(block.get("citations"), list):
            opened["citations"] = []
            deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
    elif kind == "thinking":
        opened["thinking"] = ""
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"])]
        if "signature" in block:
            opened["signature"] = ""
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use") and block.get("input"):
        opened["input"] = {}
        deltas = [{"type": "input_json_delta", "partial_json": h} for h in halves(block["input"])]
    started = {"type": "content_block_start", "index": index, "content_block": opened}
    moved = [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
    return [started, *moved, {"type": "content_block_stop", "index": index}]


def chat_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `chat.completion.chunk`s of this body, its usage last (`include_usage`)."""
    fields = {k: v for k, v in body.items() if k not in ("choices", "usage")}
    if "object" in fields:
        fields["object"] = "chat.completion.chunk"

    def chunk(choices: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
        if "usage" not in body:
            return {**fields, "choices": choices}
        return {**fields, "choices": choices, "usage": usage}

    chunks = []
    for choice in body["choices"]:
        index, message = choice.get("index", 0), choice["message"]
        opened = {k: _emptied(k, v) for k, v in message.items()}
        first = {"index": index, "delta": opened}
        first |= {k: None for k in ("logprobs", "finish_reason") if k in choice}
        chunks.append(chunk([first]))
        content = message.get("content")
        for piece in pieces(content) if isinstance(content, str) else []:
            chunks.append(chunk([{"index": index, "delta": {"content": piece}}]))
        for n, call in enumerate(message.get("tool_calls") or []):
            for half in _argument_halves(call):
                delta = {"tool_calls": [{"index": n, "function": {"arguments": half}}]}
                chunks.append(chunk([{"index": index, "delta": delta}]))
        ending = {k: v for k, v in choice.items() if k not in ("index", "message")}
        chunks.append(chunk([{"index": index, "delta": {}, **ending}]))
    if "usage" in body:
        chunks.append(chunk([], body["usage"]))
    return chunks


def _emptied(key: str, value: Any) -> Any:
    """A message field as the first delta carries it: text and arguments still to come."""
    if key == "content" and isinstance(value, str):
        return ""
    if key == "tool_calls" and isinstance(value, list):
        return [
            {"index": n, **call, "function": {**call["function"], "arguments": ""}}
            for n, call in enumerate(value)
        ]
    return value


def _argument_halves(call: dict[str, Any]) -> list[str]:
    arguments = call["function"]["arguments"]
    return [h for h in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]) if h]


def halves(value: Any) -> list[str]:
    """`value` as JSON in two pieces, cut in the middle (as partial JSON arrives)."""
    text = json.dumps(value)
    return [text[: len(text) // 2], text[len(text) // 2 :]]
