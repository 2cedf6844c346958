"""The OpenAI Responses API wire format (and the Open Responses servers that speak it):
pure functions, no I/O.

The history is the request's `input` items, kept verbatim: the question is a `user`
message item, each tool result a `function_call_output` item, and a response is one
history message, `{"role": "assistant", "output": [...]}`, holding the response's
output items exactly as they came (reasoning items with their `encrypted_content`,
unknown item types too). `input_items()` flattens the history into the items a request
sends, so reasoning survives every call of a turn and a crash resume.

The stop is read from the response's `status` (the table in docs/design.md §6):
`completed` with function calls runs them, `completed` ends the turn, a `refusal`
content part refuses, `incomplete` is a cut answer (`max_output_tokens`, or any other
reason but `content_filter`, which refuses), and `failed` is the error it carries. Any
other status is a `ProviderFailed` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ProviderError, ProviderFailed
from ..outcomes import Stop
from ..usage import Usage
from ..wire import Message, Reply, ToolResult, ToolUse, WireFormat
from .chat_api import arguments, cached_out, error_from_body

NAME = "openai-responses"
INCOMPLETE_REFUSED = frozenset({"content_filter"})
"""`incomplete_details.reason`s that are a refusal; every other one is a cut answer
(`max_output_tokens`, and servers' own: xAI's `REASON_MAX_LEN`)."""
ENDED = frozenset({"completed", "incomplete"})
"""The statuses a response is read in; `failed` is its error, any other is unknown."""


def parse_reply(body: Any) -> Reply:
    """Read a Responses API response body; raise `ProviderError` if it is not an answer."""
    if not isinstance(body, dict):
        raise ProviderFailed(f"response body is not a JSON object: {type(body).__name__}")
    if isinstance(body.get("error"), dict) and body.get("status") != "incomplete":
        raise error_from_body({"error": body["error"]})
    status = body.get("status")
    if status not in ENDED:
        raise ProviderFailed(f"the response's status is {status!r}, not completed nor incomplete")
    output = body.get("output")
    if not isinstance(output, list) or not all(isinstance(i, dict) for i in output):
        raise ProviderFailed("response body has no list of output items")
    read = _Read.of(output)
    return Reply(
        stop=_stop(body, read),
        raw_stop=_raw_stop(body),
        message={"role": "assistant", "output": output},
        text="\n".join(read.texts),
        tool_uses=read.uses,
        steps=read.steps,
        usage=parse_usage(body.get("usage")),
        raw=body,
        keep=bool(output),
    )


class _Read:
    """What one pass over the output items finds (this runs on every model call)."""

    __slots__ = ("refused", "steps", "texts", "uses")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.uses: tuple[ToolUse, ...] = ()
        self.steps: tuple[str, ...] = ()
        self.refused = False

    @classmethod
    def of(cls, output: list[dict[str, Any]]) -> _Read:
        read, uses, steps = cls(), [], []
        for item in output:
            kind = item.get("type")
            if kind == "message":
                read._message(item)
            elif kind == "function_call":
                uses.append(_use(item))
                steps.append(uses[-1].name)
            elif isinstance(kind, str) and kind.endswith("_call"):
                steps.append(kind)  # a server tool (web_search_call, mcp_call...)
            elif not isinstance(kind, str):
                raise ProviderFailed("response body has an output item without a type")
        read.uses, read.steps = tuple(uses), tuple(steps)
        return read

    def _message(self, item: dict[str, Any]) -> None:
        content = item.get("content")
        for part in content if isinstance(content, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "output_text" and isinstance(part.get("text"), str):
                self.texts.append(part["text"])
            elif kind == "refusal":
                self.refused = True


def _use(item: dict[str, Any]) -> ToolUse:
    """A `function_call` item as the tool use the loop runs: its `call_id` is the id its
    `function_call_output` answers (the item's own `id` is not)."""
    return ToolUse(
        id=str(item.get("call_id")),
        name=str(item.get("name")),
        input=arguments(item.get("arguments")),
    )


def _stop(body: dict[str, Any], read: _Read) -> Stop:
    if read.refused:
        return Stop.REFUSAL
    if body.get("status") == "incomplete":
        reason = _incomplete_reason(body)
        return Stop.REFUSAL if reason in INCOMPLETE_REFUSED else Stop.MAX_TOKENS
    return Stop.TOOL_USE if read.uses else Stop.END_TURN


def _incomplete_reason(body: dict[str, Any]) -> str | None:
    details = body.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return reason if isinstance(reason, str) else None


def _raw_stop(body: dict[str, Any]) -> str:
    """The stop as the trace says it: the status, and an incomplete one's reason."""
    status = str(body.get("status"))
    reason = _incomplete_reason(body)
    return f"{status}:{reason}" if status == "incomplete" and reason else status


def parse_usage(usage: Any) -> Usage:
    """Usage with Anthropic's meaning: `input_tokens` include the cached ones
    (`input_tokens_details.cached_tokens`), counted out as cache reads; `output_tokens`
    include the reasoning tokens (billed as output; `output_tokens_details` in the trace)."""
    return cached_out(usage, "input_tokens", "output_tokens")


def failed(response: dict[str, Any]) -> ProviderError:
    """The error of a `failed` response (its `error` object, or that it failed)."""
    error = response.get("error")
    if isinstance(error, dict):
        return error_from_body({"error": error})
    return ProviderFailed("the response failed without saying why")


def input_items(history: Sequence[Message]) -> list[dict[str, Any]]:
    """The `input` of a request: every history item, a response's output items spread out
    in their order, all of them as stored."""
    items: list[dict[str, Any]] = []
    for message in history:
        output = message.get("output") if message.get("role") == "assistant" else None
        if isinstance(output, list):
            items.extend(output)
        else:
            items.append(message)
    return items


def user_message(text: str) -> Message:
    return {"role": "user", "content": text}


def tool_results(results: Sequence[ToolResult]) -> list[Message]:
    """One `function_call_output` item per result, in the order given."""
    return [
        {"type": "function_call_output", "call_id": r.tool_use_id, "output": r.content}
        for r in results
    ]


def tool_uses(message: Message) -> tuple[ToolUse, ...]:
    """The function calls of a stored response, in order."""
    output = message.get("output")
    if message.get("role") != "assistant" or not isinstance(output, list):
        return ()
    return tuple(
        _use(i) for i in output if isinstance(i, dict) and i.get("type") == "function_call"
    )


def message_text(message: Message) -> str:
    """The text of a history message: a response's `output_text` parts, a user message's
    text, a tool result's output."""
    if message.get("type") == "function_call_output":
        output = message.get("output")
        return output if isinstance(output, str) else _parts_text(output)
    output = message.get("output")
    if message.get("role") == "assistant" and isinstance(output, list):
        return "\n".join(
            _parts_text(i.get("content"))
            for i in output
            if isinstance(i, dict) and i.get("type") == "message"
        )
    content = message.get("content")
    return content if isinstance(content, str) else _parts_text(content)


def _parts_text(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(
        str(p.get("text", ""))
        for p in parts
        if isinstance(p, dict) and p.get("type") in ("output_text", "input_text", "text")
    )


def recorded_results(history: Sequence[Message]) -> dict[str, ToolResult]:
    """Every tool result in a history by call id (replay answers tools with these)."""
    return {
        str(m.get("call_id")): ToolResult(str(m.get("call_id")), message_text(m))
        for m in history
        if m.get("type") == "function_call_output"
    }


WIRE = WireFormat(
    name=NAME,
    parse_reply=parse_reply,
    user_message=user_message,
    tool_results=tool_results,
    tool_uses=tool_uses,
    message_text=message_text,
    recorded_results=recorded_results,
)
"""This module's functions as the typed interface a provider carries."""
