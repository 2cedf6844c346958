"""The demo model: a tiny deterministic model for `turnkeeper demo` and `serve` without a key.

Asked about the todo list, it calls `read_file("todo.txt")`, then answers from
the tool result. It speaks the Messages API wire format, so everything after it
(history, trace, replay) is exactly what a real model would produce. Served, it
takes a moment to answer each call (`pause`), as a model would: long enough
for the chat to show what the turn just did ("Read a file") before the answer.
Its answer's text goes to `on_text` word by word (`gap` seconds apart), as a
streaming model's would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..wire import Message, Reply, ToolResult, ToolSpec
from . import TextSink, messages_api
from .scripted import stream_text

GREETING = (
    "I am turnkeeper's offline demo model: I can only answer \"what's on my todo list?\". "
    "For a real model, restart `turnkeeper serve` with ANTHROPIC_API_KEY set, "
    "or OPENAI_BASE_URL for an OpenAI-compatible server (choose one with --provider and --model)."
)
"""The one short answer to anything but the todo question: how to configure a real model."""


class DemoProvider:
    """turnkeeper's offline demo model: answers "what's on my todo list?" by calling `read_file`
    on `todo.txt` and reading the result back, and anything else by saying how to configure a
    real model. What `serve` runs when no provider is configured."""

    wire = messages_api.WIRE

    def __init__(self, *, pause: float = 0.0, gap: float = 0.0) -> None:
        self.calls = 0
        self.pause = pause
        """Seconds each call takes (never more than half its timeout)."""
        self.gap = gap
        """Seconds between the pieces of text it streams."""

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        """The demo's next response after `history`, after `pause` seconds (at most half the
        timeout), its text streamed to `on_text`."""
        self.calls += 1
        if self.pause > 0:
            await asyncio.sleep(min(self.pause, timeout / 2))
        reply = messages_api.parse_reply(self.respond(history))
        await stream_text(reply.text, on_text, self.gap)
        return reply

    def respond(self, history: Sequence[Message]) -> dict[str, Any]:
        """The response body the demo model gives after `history`."""
        last = history[-1] if history else {}
        result = _tool_result(last)
        if result is not None:
            text, failed = result
            answer = f"I could not read your todo list: {text}" if failed else f"your todos: {text}"
            return _body([{"type": "text", "text": answer}], "end_turn", self.calls)
        question = messages_api.message_text(last).lower()
        if "todo" in question:
            use = {
                "type": "tool_use",
                "id": f"toolu_demo_{self.calls}",
                "name": "read_file",
                "input": {"path": "todo.txt"},
            }
            return _body([use], "tool_use", self.calls)
        return _body([{"type": "text", "text": GREETING}], "end_turn", self.calls)

    def user_message(self, text: str) -> Message:
        """The question as an Anthropic Messages `user` message."""
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        """Tool results as one Anthropic Messages `user` message of `tool_result` blocks."""
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        """The request parameters a trace records: the demo model."""
        return {"provider": "demo", "model": "demo"}


def _tool_result(message: Message) -> tuple[str, bool] | None:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return None
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return str(block.get("content", "")).strip(), bool(block.get("is_error"))
    return None


def _body(content: list[dict[str, Any]], stop_reason: str, n: int) -> dict[str, Any]:
    return {
        "id": f"msg_demo_{n}",
        "type": "message",
        "role": "assistant",
        "model": "demo",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
