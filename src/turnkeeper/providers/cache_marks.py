"""Prompt-cache breakpoints on a Messages API request: pure functions, no I/O.

Anthropic caches a request's prefix (tools, then system, then messages) up to
each block marked `cache_control`; a later request that repeats a written
prefix reads it back at a tenth of the input price, and pays 1.25× (2× for
the one-hour TTL) for what it writes. At most four marks per request; here:

    tools      the last tool definition       shared by every conversation
    system     the instructions               shared by every conversation
    previous   the last block of the user message before the latest reply:
               where the previous call's prefix ended (read back exactly, however
               many blocks the reply and its tool results added since)
    latest     the last block of the last message: everything sent is written

A message whose content is a string (the user's question) takes no mark: it
is sent as it is stored, so that the prefix is the same bytes on every call,
and the mark goes to the nearest block before it instead.

Explicit marks rather than the API's top-level automatic `cache_control`:
they work on every client (Bedrock, Vertex, Anthropic-compatible gateways)
and let the tools and instructions be shared across conversations.

The history is stored verbatim and never carries a mark: the request holds
shallow copies of the marked messages, with copies of their marked blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ..wire import Message

TTLS = ("5m", "1h")
DEFAULT_TTL = "5m"
MAX_BREAKPOINTS = 4
PLACES = ("tools", "system", "previous", "latest")
"""Where the marks go, in the order of the prefix (the trace's request says so)."""

MARKABLE = frozenset(
    {
        "text", "image", "document", "search_result", "tool_use", "tool_result",
        "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
        "code_execution_tool_result", "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result", "tool_search_tool_result",
        "mcp_tool_use", "mcp_tool_result", "container_upload", "compaction",
    }
)  # fmt: skip
"""Content block types that take a `cache_control` (the SDK's block params that have one;
not `thinking` nor `redacted_thinking`). A block of another type is never marked: the
last markable block before it is."""


def ttl_of(setting: bool | str | None) -> str | None:
    """The cache TTL a `prompt_cache` setting asks for: True is "5m"; False or None, off.
    Anything else is a `ConfigError`."""
    if setting is True:
        return DEFAULT_TTL
    if setting is False or setting is None:
        return None
    if isinstance(setting, str) and setting in TTLS:
        return setting
    raise ConfigError(f"prompt_cache must be True, False, '5m' or '1h', got {setting!r}")


def control(ttl: str) -> dict[str, str]:
    """The `cache_control` of one breakpoint (the 5-minute TTL is the API's default)."""
    return {"type": "ephemeral"} if ttl == DEFAULT_TTL else {"type": "ephemeral", "ttl": ttl}


def marked_tools(tools: list[dict[str, Any]], mark: dict[str, str]) -> list[dict[str, Any]]:
    """`tools` with a copy of the last definition marked (every tool type takes one)."""
    if not tools:
        return tools
    return [*tools[:-1], {**tools[-1], "cache_control": mark}]


def marked_system(system: str, mark: dict[str, str]) -> list[dict[str, Any]]:
    """The instructions as one marked text block."""
    return [{"type": "text", "text": system, "cache_control": mark}]


def marked_messages(history: Sequence[Message], mark: dict[str, str]) -> list[Message]:
    """The messages to send: `history`, with copies of the previous call's last message
    and of the last message marked (see the module docstring); the rest shared as is."""
    messages = list(history)
    done = -1
    for place in _places(messages):
        index, copied = _nearest(messages, place, mark)
        if copied is not None and index != done:
            messages[index], done = copied, index
    return messages


def _nearest(
    messages: Sequence[Message], place: int, mark: dict[str, str]
) -> tuple[int, Message | None]:
    """(index, marked copy) of the message at `place`, else of the nearest one before it
    that takes a mark; (-1, None) when none does."""
    for index in range(place, -1, -1):
        copied = _marked_message(messages[index], mark)
        if copied is not None:
            return index, copied
    return -1, None


def _places(messages: Sequence[Message]) -> tuple[int, ...]:
    """Indexes of the messages to mark: the previous call's last one (the last user message
    before the latest reply), and the last one. Plain loops: this runs on every call."""
    if not messages:
        return ()
    last = reply = len(messages) - 1
    while reply >= 0 and messages[reply].get("role") != "assistant":
        reply -= 1
    previous = reply - 1
    while previous >= 0 and messages[previous].get("role") != "user":
        previous -= 1
    return (last,) if previous < 0 else (previous, last)


def _marked_message(message: Message, mark: dict[str, str]) -> Message | None:
    """A shallow copy of `message` whose last markable block is a marked copy; None when
    no block takes a mark (string content, empty text, thinking only)."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    for i in range(len(content) - 1, -1, -1):
        if _markable(content[i]):
            blocks = list(content)
            blocks[i] = {**content[i], "cache_control": mark}
            return {**message, "content": blocks}
    return None


def _markable(block: Any) -> bool:
    """A block the API takes a mark on: a known type, and not an empty text (which the
    API refuses to cache)."""
    if not isinstance(block, dict) or block.get("type") not in MARKABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def breakpoints(body: dict[str, Any]) -> int:
    """How many blocks of a request body carry a `cache_control` (tests and the bench)."""
    tools = body.get("tools") or []
    system = body.get("system")
    blocks = list(tools) + (system if isinstance(system, list) else [])
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks += content if isinstance(content, list) else []
    return sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)
