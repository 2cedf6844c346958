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


def assert_valid_history(history: list[dict[str, Any]]) -> None:
    """The history is a valid Messages API request: what the next turn will send.

    It starts with a user message; every assistant message has content; every
    client `tool_use` is answered by a `tool_result` in the very next message (a
    user message), and every `tool_result` answers a `tool_use` of the message
    before it.
    """
    assert history, "empty history"
    assert history[0]["role"] == "user"
    for i, message in enumerate(history):
        assert message["role"] in ("user", "assistant"), message
        content = message["content"]
        if message["role"] == "assistant":
            assert isinstance(content, list), f"message {i}: assistant content is not blocks"
            assert content, f"message {i}: empty assistant content"
        uses = _ids(message, "tool_use", "id") if message["role"] == "assistant" else []
        answered = (
            _ids(history[i + 1], "tool_result", "tool_use_id") if i + 1 < len(history) else []
        )
        if uses:
            assert history[i + 1]["role"] == "user", f"message {i}: tool_use not followed by user"
            assert answered == uses, f"message {i}: tool uses {uses} answered by {answered}"
        if message["role"] == "user":
            results = _ids(message, "tool_result", "tool_use_id")
            before = _ids(history[i - 1], "tool_use", "id") if i > 0 else []
            assert set(results) <= set(before), f"message {i}: tool_result without its tool_use"


def _ids(message: dict[str, Any], block_type: str, key: str) -> list[str]:
    content = message["content"]
    if not isinstance(content, list):
        return []
    return [b[key] for b in content if isinstance(b, dict) and b.get("type") == block_type]
