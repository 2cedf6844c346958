"""The dev model: an offline model that exercises an assistant as it is, without a key.

`serve APP --provider dev` (or `Assistant(provider="dev")`, `run --provider dev`). Asked
anything, it calls each tool it is offered, in the order offered, one per response
(`stop_reason` `tool_use`), with input made from the tool's schema (`samples.py`); a
tool that needs approval waits for it through the loop as with any model. Once every
tool has answered, it ends the turn (`end_turn`) with a Markdown answer that says what
it did: each tool, its input and a short view of its result (or of its error: a
schema it could not satisfy is one, and the turn goes on). An assistant of more tools
than a turn's default iterations can hold is served several tools per response.

Its answer streams to `on_text` word by word at a reader's pace (`pace` words per
second, ~30 by default; tests set it high), and each call first takes the time of a
few words, so a reader sees each tool's caption before the next step. Its usage is an
estimate (a token for every four characters in and out); it has no price, so no cost.
It speaks the Messages API wire format: the history, trace and replay are what a real
model's would be.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..budget import DEFAULT_MAX_ITERATIONS
from ..errors import ConfigError
from ..wire import Message, Reply, ToolResult, ToolSpec
from . import TextSink, messages_api
from .samples import sample_input
from .scripted import pieces, stream_text

PACE = 30.0
"""Words per second the dev model's answer streams at, by default: a quick reader's pace."""
THINK_WORDS = 12
"""Each call takes the time this many words take to stream, before it answers."""
ROUNDS = DEFAULT_MAX_ITERATIONS - 1
"""Responses of tool calls at most, with the answer after them: within a default turn."""
VIEW = 80
"""Characters of a tool's result the answer shows at most."""
CHARS_PER_TOKEN = 4
"""The estimate of usage: a token for every four characters."""
REAL_MODEL = (
    "For a real model, choose a provider other than `dev` (`--provider`, TURNKEEPER_PROVIDER "
    "or the Assistant's `provider`) with ANTHROPIC_API_KEY set, or OPENAI_BASE_URL for an "
    "OpenAI-compatible server."
)
"""The answer's last line: how to leave the dev model for a real one."""


class DevProvider:
    """turnkeeper's offline dev model: calls each tool offered with input made from its
    schema, then streams a Markdown answer of what each returned, at `pace` words a second."""

    wire = messages_api.WIRE

    def __init__(self, *, pace: float = PACE) -> None:
        if not (isinstance(pace, int | float) and math.isfinite(pace) and pace > 0):
            raise ConfigError(f"the dev model's pace must be a positive number, got {pace!r}")
        self.pace = float(pace)
        """Words per second its answer streams at."""
        self.calls = 0

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        """The dev model's next response after `history`, after a moment's thought (at most
        half the timeout); its answer streamed to `on_text` at its pace, within the timeout."""
        self.calls += 1
        await asyncio.sleep(min(THINK_WORDS / self.pace, timeout / 2))
        reply = messages_api.parse_reply(self.respond(history, tools))
        words = max(len(pieces(reply.text)), 1)
        await stream_text(reply.text, on_text, min(1 / self.pace, timeout / 2 / words))
        return reply

    def respond(self, history: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The response body after `history`, offered `tools`: the next tools' calls, or the
        answer once every tool offered was called in this turn."""
        done = calls_in_turn(history)
        called = {call.name for call in done}
        due = [t for t in tools if t.name not in called]
        if due:
            per_response = math.ceil(len(tools) / min(len(tools), ROUNDS))
            content = [_use(t, len(history), n) for n, t in enumerate(due[:per_response])]
            return _body(content, "tool_use", history, tools)
        text = answer(done)
        return _body([{"type": "text", "text": text}], "end_turn", history, tools)

    def user_message(self, text: str) -> Message:
        """The question as an Anthropic Messages `user` message."""
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        """Tool results as one Anthropic Messages `user` message of `tool_result` blocks."""
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        """The request parameters a trace records: the dev model and its pace."""
        return {"provider": "dev", "model": "dev", "pace": self.pace}


@dataclass(frozen=True, slots=True)
class Call:
    """A tool called in this turn, as the history holds it."""

    name: str
    input: Any
    result: str
    """Its result's text (empty until it has one)."""
    failed: bool
    """Whether the result is an error."""


def calls_in_turn(history: Sequence[Message]) -> list[Call]:
    """The tools called since the turn's question (the last user message that is not
    tool results), in order, each with its result."""
    start = max((i for i, m in enumerate(history) if _is_question(m)), default=-1)
    results = messages_api.recorded_results(history[start + 1 :])
    calls: list[Call] = []
    for message in history[start + 1 :]:
        for use in messages_api.tool_uses(message):
            result = results.get(use.id)
            text, failed = ("", False) if result is None else (result.content, result.is_error)
            calls.append(Call(use.name, use.input, text, failed))
    return calls


def answer(calls: Sequence[Call]) -> str:
    """The dev model's Markdown answer: what it is, each tool it called and what came back,
    and how to select a real model."""
    if not calls:
        said = "This assistant has no tools, so there was nothing to call."
        lines = [f"I am turnkeeper's **dev model**, offline. {said}"]
    else:
        lines = [
            "I am turnkeeper's **dev model**, offline: I called each tool with sample input.",
            "",
        ]
        lines += [_line(call) for call in calls]
    lines += ["", REAL_MODEL]
    return "\n".join(lines)


def short(text: str, most: int = VIEW) -> str:
    """`text` on one line, cut to `most` characters with "…" where it was cut."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[: most - 1].rstrip() + "…"


def code(text: str) -> str:
    """`text` as a Markdown code span, however many backticks it holds."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _line(call: Call) -> str:
    shown = json.dumps(call.input, ensure_ascii=False)
    said = "error: " if call.failed else ""
    view = code(short(call.result)) if call.result.strip() else "nothing"
    return f"- **{_escaped(call.name)}** {code(short(shown))} → {said}{view}"


def _escaped(name: str) -> str:
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", name)


def _is_question(message: Message) -> bool:
    content = message.get("content")
    if message.get("role") != "user":
        return False
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _use(tool: ToolSpec, turn: int, n: int) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_dev_{turn}_{n}",
        "name": tool.name,
        "input": sample_input(tool.input_schema),
    }


def _body(
    content: list[dict[str, Any]],
    stop_reason: str,
    history: Sequence[Message],
    tools: Sequence[ToolSpec],
) -> dict[str, Any]:
    offered = [(t.name, t.description, t.input_schema) for t in tools]
    read = len(json.dumps([list(history), offered], ensure_ascii=False, default=str))
    written = len(json.dumps(content, ensure_ascii=False))
    return {
        "id": f"msg_dev_{len(history)}",
        "type": "message",
        "role": "assistant",
        "model": "dev",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": math.ceil(read / CHARS_PER_TOKEN),
            "output_tokens": math.ceil(written / CHARS_PER_TOKEN),
        },
    }
