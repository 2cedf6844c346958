"""The OpenAI Chat Completions wire format: pure functions, no I/O.

The same functions as `messages_api`, for any OpenAI-compatible server (OpenAI,
vLLM, llama.cpp, Ollama). The history holds the assistant message exactly as
received (`choices[0].message`, unknown keys such as `reasoning_content`
included) and one `tool` message per tool result, in tool-call order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..errors import ContextTooLong, ProviderError, ProviderFailed, ProviderUnavailable
from ..outcomes import Stop
from ..usage import Usage, count
from ..wire import Message, Reply, ToolResult, ToolUse, WireFormat

STOP_REASONS: dict[str, Stop] = {
    "tool_calls": Stop.TOOL_USE,
    "function_call": Stop.TOOL_USE,
    "stop": Stop.END_TURN,
    "length": Stop.MAX_TOKENS,
    "content_filter": Stop.REFUSAL,
}
"""`finish_reason` into the closed set; a non-null `message.refusal` is `Stop.REFUSAL` too."""

# Error codes and types OpenAI-compatible servers send that mean "not now".
UNAVAILABLE_ERRORS = frozenset(
    {"rate_limit_exceeded", "server_error", "service_unavailable", "overloaded", "timeout"}
)


def parse_reply(body: Any) -> Reply:
    """Read a Chat Completions response body; raise `ProviderError` if it is not one."""
    if not isinstance(body, dict):
        raise ProviderFailed(f"response body is not a JSON object: {type(body).__name__}")
    if isinstance(body.get("error"), dict):
        raise error_from_body(body)
    message, finish = _first_choice(body)
    uses = tool_uses(message)
    return Reply(
        stop=stop(finish, message),
        raw_stop=finish,
        message=message,
        text=message_text(message),
        tool_uses=uses,
        steps=tuple(u.name for u in uses),
        usage=parse_usage(body.get("usage")),
        raw=body,
        keep=any(message.get(k) is not None for k in ("content", "tool_calls", "refusal")),
    )


def _first_choice(body: dict[str, Any]) -> tuple[Message, str | None]:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderFailed("response body has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
        raise ProviderFailed("the first choice has no assistant message")
    finish = choices[0].get("finish_reason")
    return message, finish if isinstance(finish, str) else None


def stop(finish_reason: str | None, message: Message) -> Stop:
    """The stop for a finish reason; a refusal wins, and `stop` with tool calls runs them.

    Some OpenAI-compatible servers end a tool-calling response with `stop`; its
    tool calls still need results before the history can be sent again.
    """
    if message.get("refusal"):
        return Stop.REFUSAL
    found = STOP_REASONS.get(finish_reason or "", Stop.OTHER)
    if found is Stop.END_TURN and message.get("tool_calls"):
        return Stop.TOOL_USE
    return found


def tool_uses(message: Message) -> tuple[ToolUse, ...]:
    """The function calls of an assistant message, in order; unparsable arguments stay a string."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ()
    uses = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        uses.append(
            ToolUse(
                id=str(call.get("id")),
                name=str(function.get("name")),
                input=arguments(function.get("arguments")),
            )
        )
    return tuple(uses)


def arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def parse_usage(usage: Any) -> Usage:
    """Usage with Anthropic's meaning, the one every view reads: `prompt_tokens` include the
    cached ones (`prompt_tokens_details.cached_tokens`), which are cache reads, so they are
    counted out of `input_tokens`, the tokens billed at the input price."""
    return cached_out(usage, "prompt_tokens", "completion_tokens")


def cached_out(usage: Any, given: str, output: str) -> Usage:
    """OpenAI's usage (`usage[given]` tokens in, of which `usage[given + "_details"]`'s
    `cached_tokens` were cache reads; `usage[output]` out) with the cached ones counted out
    of `input_tokens`: what both OpenAI wires (chat_api, responses_api) report."""
    if not isinstance(usage, dict):
        return Usage(iterations=1)
    details = usage.get(f"{given}_details")
    details = details if isinstance(details, dict) else {}
    prompt, cached = count(usage.get(given)), count(details.get("cached_tokens"))
    return Usage(
        iterations=1,
        input_tokens=max(0, prompt - cached),
        output_tokens=count(usage.get(output)),
        cache_read_input_tokens=cached,
    )


def error_from_body(body: dict[str, Any], status: int | None = None) -> ProviderError:
    """The exception for an error body (`{"error": {"message", "type", "code"}}`)."""
    error = body.get("error")
    error = error if isinstance(error, dict) else {}
    kind = str(error.get("code") or error.get("type") or "unknown_error")
    message = f"{kind}: {error.get('message', '')}".rstrip(": ")
    unavailable = kind in UNAVAILABLE_ERRORS or str(error.get("type")) in UNAVAILABLE_ERRORS
    cls: type[ProviderError] = ProviderUnavailable if unavailable else ProviderFailed
    if kind == "context_length_exceeded" or "maximum context length" in message:
        cls = ContextTooLong
    return cls(message, status=status)


def user_message(text: str) -> Message:
    return {"role": "user", "content": text}


def tool_results(results: Sequence[ToolResult]) -> list[Message]:
    """One `tool` message per result, in the order given (the tool calls' order)."""
    return [{"role": "tool", "tool_call_id": r.tool_use_id, "content": r.content} for r in results]


def message_text(message: Message) -> str:
    """The text of a message, whether its content is a string, text parts, or null."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def recorded_results(history: Sequence[Message]) -> dict[str, ToolResult]:
    """Every tool result in a history by tool call id (replay answers tools with these)."""
    return {
        str(m.get("tool_call_id")): ToolResult(str(m.get("tool_call_id")), message_text(m))
        for m in history
        if m.get("role") == "tool"
    }


WIRE = WireFormat(
    name="openai",
    parse_reply=parse_reply,
    user_message=user_message,
    tool_results=tool_results,
    tool_uses=tool_uses,
    message_text=message_text,
    recorded_results=recorded_results,
)
"""This module's functions as the typed interface a provider carries."""
