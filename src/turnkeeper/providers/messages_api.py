"""The Anthropic Messages API wire format: pure functions, no I/O.

Shared by the scripted model and the Anthropic SDK adapter. Blocks are read by
`type`, never by position; unknown block types pass through untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ContextTooLong, ProviderError, ProviderFailed, ProviderUnavailable
from ..outcomes import Stop
from ..usage import Usage, count
from ..wire import Message, Reply, ToolResult, ToolUse, WireFormat

STOP_REASONS: dict[str, Stop] = {
    "tool_use": Stop.TOOL_USE,
    "pause_turn": Stop.PAUSE_TURN,
    "compaction": Stop.COMPACTION,
    "end_turn": Stop.END_TURN,
    "stop_sequence": Stop.END_TURN,
    "max_tokens": Stop.MAX_TOKENS,
    "refusal": Stop.REFUSAL,
    "model_context_window_exceeded": Stop.CONTEXT_EXCEEDED,
}

# Block types that record a tool being used, on either side of the wire.
TOOL_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})

# Error types the API sends that mean "not now" rather than "never".
UNAVAILABLE_ERRORS = frozenset(
    {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}
)


def parse_reply(body: Any) -> Reply:
    """Read a Messages API response body; raise `ProviderFailed` if it is not one."""
    if not isinstance(body, dict):
        raise ProviderFailed(f"response body is not a JSON object: {type(body).__name__}")
    if body.get("type") == "error":
        raise error_from_body(body)
    content = body.get("content")
    if not isinstance(content, list):
        raise ProviderFailed("response body has no list of content blocks")
    texts: list[str] = []
    uses: list[ToolUse] = []
    steps: list[str] = []
    for b in content:  # one pass: this runs on every model call
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            if "text" in b:
                texts.append(b["text"])
        elif kind in TOOL_USE_TYPES:
            name = str(b.get("name"))
            steps.append(name)
            if kind == "tool_use":
                uses.append(ToolUse(id=str(b.get("id")), name=name, input=b.get("input")))
        elif not isinstance(kind, str):
            raise ProviderFailed("response body has a content block without a type")
    raw_stop = body.get("stop_reason")
    raw_stop = raw_stop if isinstance(raw_stop, str) else None
    details = body.get("stop_details")
    return Reply(
        stop=STOP_REASONS.get(raw_stop or "", Stop.OTHER),
        raw_stop=raw_stop,
        message={"role": "assistant", "content": content},
        text="\n".join(texts),
        tool_uses=tuple(uses),
        steps=tuple(steps),
        usage=parse_usage(body.get("usage")),
        raw=body,
        keep=bool(content),
        stop_details=details if isinstance(details, dict) else None,
        context=context_size(body.get("usage")),
    )


def parse_usage(usage: Any) -> Usage:
    """Usage from the Messages API `usage` object; absent fields count as zero.

    With `iterations` (the API compacted, fell back to another model, or asked an
    advisor within the call), the tokens are their sum: the top-level counts are the
    last sampling's alone, and adding both would count that one twice."""
    if not isinstance(usage, dict):
        return Usage(iterations=1)
    server = usage.get("server_tool_use")
    server = server if isinstance(server, dict) else {}
    parts = _iterations(usage) or [usage]
    return Usage(
        iterations=1,
        input_tokens=sum(count(p.get("input_tokens")) for p in parts),
        output_tokens=sum(count(p.get("output_tokens")) for p in parts),
        cache_creation_input_tokens=sum(count(p.get("cache_creation_input_tokens")) for p in parts),
        cache_read_input_tokens=sum(count(p.get("cache_read_input_tokens")) for p in parts),
        web_search_requests=count(server.get("web_search_requests")),
        web_fetch_requests=count(server.get("web_fetch_requests")),
    )


def _iterations(usage: dict[str, Any]) -> list[dict[str, Any]]:
    found = usage.get("iterations")
    return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []


def context_size(usage: Any) -> int | None:
    """The tokens the conversation holds after the call, when `usage.iterations` says: its
    last entry's input (cached or not) and output. None without iterations (the top-level
    usage says it)."""
    last = _iterations(usage)[-1:] if isinstance(usage, dict) else []
    if not last:
        return None
    kinds = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(count(last[0].get(k)) for k in (*kinds, "output_tokens"))


def error_from_body(body: dict[str, Any], status: int | None = None) -> ProviderError:
    """The exception for a Messages API error body (`{"type": "error", ...}`)."""
    error = body.get("error")
    error = error if isinstance(error, dict) else {}
    kind = str(error.get("type", "unknown_error"))
    message = f"{kind}: {error.get('message', '')}".rstrip(": ")
    request_id = body.get("request_id")
    request_id = request_id if isinstance(request_id, str) else None
    cls: type[ProviderError] = ProviderUnavailable if kind in UNAVAILABLE_ERRORS else ProviderFailed
    if kind == "invalid_request_error" and "prompt is too long" in message.lower():
        cls = ContextTooLong
    return cls(message, status=status, request_id=request_id)


def user_message(text: str) -> Message:
    return {"role": "user", "content": text}


def tool_results(results: Sequence[ToolResult]) -> list[Message]:
    """All results of one response as one `user` message, in tool-use order."""
    if not results:
        return []
    blocks: list[dict[str, Any]] = []
    for r in results:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": r.tool_use_id}
        block["content"] = r.content
        if r.is_error:
            block["is_error"] = True
        blocks.append(block)
    return [{"role": "user", "content": blocks}]


def tool_uses(message: Message) -> tuple[ToolUse, ...]:
    """The client tool uses of an assistant history message (none for any other message)."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return ()
    return tuple(
        ToolUse(id=str(b.get("id")), name=str(b.get("name")), input=b.get("input"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )


def message_text(message: Message) -> str:
    """The text of a history message, whether its content is a string or blocks."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def recorded_results(history: Sequence[Message]) -> dict[str, ToolResult]:
    """Every tool result in a history by tool use id (replay answers tools with these)."""
    found: dict[str, ToolResult] = {}
    for message in history:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                text = b.get("content", "")
                if not isinstance(text, str):
                    text = message_text({"content": text})
                found[str(b.get("tool_use_id"))] = ToolResult(
                    str(b.get("tool_use_id")), text, bool(b.get("is_error", False))
                )
    return found


WIRE = WireFormat(
    name="anthropic",
    parse_reply=parse_reply,
    user_message=user_message,
    tool_results=tool_results,
    tool_uses=tool_uses,
    message_text=message_text,
    recorded_results=recorded_results,
)
"""This module's functions as the typed interface a provider carries."""
