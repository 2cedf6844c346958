"""The demo model: a tiny deterministic model for `turnkeeper demo` and `serve` without a key.

Asked about the todo list, it calls `read_file("todo.txt")` (when that tool is
offered), then answers from the tool result. Anything else, and the todo question
where no `read_file` is offered (an application's own assistant), it answers by
saying it is the offline demo and how to select a real model where it runs
(`Where`: `run`, `serve`, `worker`, or an application of one's own). It speaks
the Messages API wire format, so everything after it (history, trace, replay)
is exactly what a real model would produce. Served, it takes a moment to answer
each call (`pause`), as a model would: long enough for the chat to show what
the turn just did ("Read a file") before the answer. Its answer's text goes to
`on_text` word by word (`gap` seconds apart), as a streaming model's would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from ..wire import Message, Reply, ToolResult, ToolSpec
from . import TextSink, messages_api
from .scripted import stream_text


class Where(StrEnum):
    """Where the demo model runs: what its answer tells the reader to do for a real model."""

    RUN = "run"
    SERVE = "serve"
    WORKER = "worker"
    APP = "app"
    """An application of one's own (`Assistant.asgi()`, a script calling `run_turn`)."""


HOW_TO_CHOOSE = {
    Where.RUN: "run again with --provider anthropic (and ANTHROPIC_API_KEY set) or "
    "--provider openai (OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server)",
    Where.SERVE: "restart `turnkeeper serve` with ANTHROPIC_API_KEY set, or OPENAI_BASE_URL "
    "for an OpenAI-compatible server (choose one with --provider and --model)",
    Where.WORKER: "restart `turnkeeper worker` with ANTHROPIC_API_KEY set, or OPENAI_BASE_URL "
    "for an OpenAI-compatible server (choose one with --provider and --model)",
    Where.APP: "start the application again with ANTHROPIC_API_KEY set, or OPENAI_BASE_URL "
    "for an OpenAI-compatible server (or give the Assistant its provider and model)",
}
"""How to select a real model, said where the demo model runs."""

TODO_TOOL = "read_file"


def greeting(where: Where, tools: Sequence[ToolSpec]) -> str:
    """The one short answer to anything but the todo question (and to that one too when no
    `read_file` is offered): what the demo model is, and how to select a real model."""
    can = (
        'I can only answer "what\'s on my todo list?"'
        if any(t.name == TODO_TOOL for t in tools)
        else "I cannot answer questions here"
    )
    return f"I am turnkeeper's offline demo model: {can}. For a real model, {HOW_TO_CHOOSE[where]}."


class DemoProvider:
    """turnkeeper's offline demo model: answers "what's on my todo list?" by calling `read_file`
    on `todo.txt` and reading the result back, and anything else by saying how to configure a
    real model where it runs (`where`). What `serve` runs when no provider is configured."""

    wire = messages_api.WIRE

    def __init__(self, *, pause: float = 0.0, gap: float = 0.0, where: Where = Where.APP) -> None:
        self.calls = 0
        self.where = where
        """Where it runs: what its answer says to do for a real model."""
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
        reply = messages_api.parse_reply(self.respond(history, tools))
        await stream_text(reply.text, on_text, self.gap)
        return reply

    def respond(self, history: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The response body the demo model gives after `history`, offered `tools`."""
        last = history[-1] if history else {}
        result = _tool_result(last)
        if result is not None:
            text, failed = result
            answer = f"I could not read your todo list: {text}" if failed else f"your todos: {text}"
            return _body([{"type": "text", "text": answer}], "end_turn", self.calls)
        question = messages_api.message_text(last).lower()
        if "todo" in question and any(t.name == TODO_TOOL for t in tools):
            use = {
                "type": "tool_use",
                "id": f"toolu_demo_{self.calls}",
                "name": TODO_TOOL,
                "input": {"path": "todo.txt"},
            }
            return _body([use], "tool_use", self.calls)
        text = greeting(self.where, tools)
        return _body([{"type": "text", "text": text}], "end_turn", self.calls)

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
