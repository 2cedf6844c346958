"""The Responses API for the fake model servers: bodies, and the event stream of a body.

A body's stream follows the recorded real ones (tests/recordings, `openai__responses__*`):
`response.created` and `response.in_progress` with the response emptied, then per output
item `response.output_item.added` (its text and arguments emptied), its parts' events
(`response.content_part.added`, the text in word-sized `response.output_text.delta`s,
`response.output_text.done`, `response.content_part.done`; a refusal's
`response.refusal.delta`; a function call's arguments in two halves) and
`response.output_item.done` with the item whole; last `response.completed`,
`response.incomplete` or `response.failed` with the whole body. Every event has its
`sequence_number`.
"""

from __future__ import annotations

import json
from typing import Any

from turnkeeper.providers.scripted import pieces

LAST = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}


def is_responses_body(body: Any) -> bool:
    return isinstance(body, dict) and body.get("object") == "response"


def response(
    *output: dict[str, Any],
    status: str = "completed",
    reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "gpt-5-mini",
) -> dict[str, Any]:
    """A Responses body (CONSTRUCTED, in the shape of the recorded ones)."""
    return {
        "id": "resp_test",
        "object": "response",
        "created_at": 1765552659,
        "status": status,
        "error": None,
        "incomplete_details": None if reason is None else {"reason": reason},
        "model": model,
        "output": list(output),
        "usage": usage
        or {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 100},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 150,
        },
    }


def text_item(text: str, n: int = 1) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {
        "id": f"msg_{n}",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }


def refusal_item(text: str = "I can't help with that.") -> dict[str, Any]:
    return {
        "id": "msg_refused",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": text}],
    }


def call_item(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {
        "id": f"fc_{call_id}",
        "type": "function_call",
        "status": "completed",
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


def reasoning_item(n: int = 1) -> dict[str, Any]:
    return {
        "id": f"rs_{n}",
        "type": "reasoning",
        "encrypted_content": f"gAAAA-encrypted-{n}",
        "summary": [{"type": "summary_text", "text": "Thinking it over."}],
    }


def sse(body: dict[str, Any]) -> list[str]:
    """The server-sent events of this body's stream, each whole."""
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events(body)]


def events(body: dict[str, Any]) -> list[dict[str, Any]]:
    start = {**body, "status": "in_progress", "output": [], "usage": None}
    start["incomplete_details"] = None
    found: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for index, item in enumerate(body["output"]):
        found += item_events(index, item)
    found.append({"type": LAST[body["status"]], "response": body})
    return [{**e, "sequence_number": n} for n, e in enumerate(found)]


def item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"output_index": index, "item_id": item.get("id")}
    added = dict(item)
    if item.get("type") == "message":
        added["content"] = []
    if item.get("type") == "function_call":
        added["arguments"] = ""
    found: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": added}
    ]
    if item.get("type") == "message":
        for n, part in enumerate(item["content"]):
            found += _part_events({**at, "content_index": n}, part)
    if item.get("type") == "function_call":
        arguments = item["arguments"]
        for half in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
            found.append({"type": "response.function_call_arguments.delta", **at, "delta": half})
        found.append(
            {"type": "response.function_call_arguments.done", **at, "arguments": arguments}
        )
    found.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return found


def _part_events(at: dict[str, Any], part: dict[str, Any]) -> list[dict[str, Any]]:
    if part.get("type") == "refusal":
        return [
            {"type": "response.refusal.delta", **at, "delta": part["refusal"]},
            {"type": "response.refusal.done", **at, "refusal": part["refusal"]},
        ]
    empty = {**part, "text": ""}
    found = [{"type": "response.content_part.added", **at, "part": empty}]
    found += [
        {"type": "response.output_text.delta", **at, "delta": piece}
        for piece in pieces(part.get("text", ""))
    ]
    found.append({"type": "response.output_text.done", **at, "text": part.get("text", "")})
    found.append({"type": "response.content_part.done", **at, "part": part})
    return found


def recorded_streams(sse_events: list[dict[str, Any]]) -> list[str]:
    """A recording's events cut into one SSE text per response (a recorded tool loop holds
    each call's stream, one after the other, each starting with `response.created`)."""
    streams: list[list[str]] = []
    for event in sse_events:
        data = event["data"]  # a string: an event the recording cut off part-way
        if not streams or (isinstance(data, dict) and data.get("type") == "response.created"):
            streams.append([])
        streams[-1].append(data if isinstance(data, str) else json.dumps(data))
    return ["".join(f"data: {d}\n\n" for d in s) for s in streams]
