"""Builders for Anthropic Messages API response bodies, shaped exactly as the API sends them."""

from __future__ import annotations

from typing import Any

_counter = 0


def _next_id(prefix: str) -> str:
    global _counter
    _counter += 1
    return f"{prefix}_{_counter:04d}"


def usage(input_tokens: int = 10, output_tokens: int = 5, **extra: Any) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **extra,
    }


def body(content: list[dict[str, Any]], stop_reason: str | None, **fields: Any) -> dict[str, Any]:
    return {
        "id": _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": fields.pop("usage", usage()),
        **fields,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(
    name: str, input: dict[str, Any] | None = None, id: str | None = None
) -> dict[str, Any]:
    return {"type": "tool_use", "id": id or _next_id("toolu"), "name": name, "input": input or {}}


def server_tool_use(name: str, input: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "server_tool_use",
        "id": _next_id("srvtoolu"),
        "name": name,
        "input": input or {},
    }


def answer(value: str, **fields: Any) -> dict[str, Any]:
    return body([text(value)], "end_turn", **fields)


def asks(*uses: dict[str, Any], say: str | None = None) -> dict[str, Any]:
    content = ([text(say)] if say is not None else []) + list(uses)
    return body(content, "tool_use")
