"""The scripted model: Messages API response bodies returned in order.

Deterministic and offline; the demo, the CLI's `--script`, replay and the
tests run on it. It fails loudly: asking for more responses than it holds ends
the turn as `failed` with a message that says so, and `unused` tells what a
turn left behind. Each response's text goes to `on_text` word by word, as a
streaming model's would (`gap` seconds apart, none by default).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ProviderUnavailable, ScriptExhausted
from ..i18n import counted
from ..wire import Message, Reply, ToolResult, ToolSpec
from . import TextSink, messages_api


class ScriptedProvider:
    """Returns the given response bodies in order, one per model call."""

    wire = messages_api.WIRE

    def __init__(self, responses: Sequence[Any], *, delay: float = 0.0, gap: float = 0.0) -> None:
        """`delay`: seconds each call takes before it answers (over the call's timeout, it
        is `ProviderUnavailable`); `gap`: seconds between the pieces of text it streams."""
        problem = _problem(responses)
        if problem is not None:
            raise ConfigError(f"the script is unusable: {problem}")
        self._responses: list[dict[str, Any]] = list(responses)
        self._next = 0
        self.delay = delay
        self.gap = gap
        self.requests: list[list[Message]] = []
        """The history each call was made with (copies), for tests."""

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedProvider:
        """Load a JSON array of response bodies; `ConfigError` if unreadable or malformed."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read script {path}: {e}") from e
        try:
            data = read_json(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"script {path} is not valid JSON: {e}") from e
        except ValueError as e:
            raise ConfigError(f"{path} is not a usable script: {e}") from e
        if not isinstance(data, list):
            raise ConfigError(f"script {path} must be a JSON array of response bodies")
        if not data:
            raise ConfigError(f"script {path} holds no responses: the model would have no answer")
        problem = _problem(data)
        if problem is not None:
            raise ConfigError(f"{path} is not a usable script: {problem}")
        return cls(data)

    @property
    def unused(self) -> int:
        """How many responses no call asked for."""
        return len(self._responses) - self._next

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        """The next scripted response (or raise the next scripted error), its text streamed to
        `on_text`; `ScriptExhausted` when none is left."""
        self.requests.append(list(history))
        if self._next >= len(self._responses):
            raise ScriptExhausted(
                f"the scripted model holds {counted(len(self._responses), 'response')} "
                f"and was asked for response {self._next + 1}"
            )
        body = self._responses[self._next]
        self._next += 1
        if self.delay:
            await asyncio.sleep(min(self.delay, timeout))
            if self.delay > timeout:
                raise ProviderUnavailable(
                    f"the scripted model takes {self.delay} s, over {timeout} s"
                )
        reply = messages_api.parse_reply(body)
        await stream_text(reply.text, on_text, self.gap)
        return reply

    def user_message(self, text: str) -> Message:
        """The question as an Anthropic Messages `user` message."""
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        """Tool results as one Anthropic Messages `user` message of `tool_result` blocks."""
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        """The request parameters a trace records: that it is scripted, and how many responses."""
        return {"provider": "scripted", "responses": len(self._responses)}


def pieces(text: str) -> list[str]:
    """`text` in word-sized pieces (a word with the spaces after it) that join to it."""
    return re.findall(r"\s+|\S+\s*", text)


async def stream_text(text: str, on_text: TextSink | None, gap: float = 0.0) -> None:
    """Give `text` to `on_text` piece by piece, `gap` seconds apart, as a model streams it."""
    if on_text is None:
        return
    for n, piece in enumerate(pieces(text)):
        if n and gap > 0:
            await asyncio.sleep(gap)
        on_text(piece)


MAX_DIGITS = 300
"""The most digits an integer in a script or trace may have: a float holds 308."""


def read_json(text: str) -> Any:
    """JSON as scripts and traces are read: `ValueError` saying why if it is not JSON
    (`JSONDecodeError`) or holds what turnkeeper cannot compute with or print: nesting
    too deep to parse, a number too large for a float, NaN or Infinity, half a
    surrogate pair."""
    try:
        data = json.loads(
            text, parse_int=_integer, parse_float=_finite, parse_constant=_not_a_number
        )
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise ValueError("its JSON is nested too deeply") from None
    except UnicodeEncodeError as e:
        half = f"\\u{ord(e.object[e.start]):04x}"
        raise ValueError(f"it holds {half}, half of a surrogate pair, which is not text") from None
    return data


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"it holds a number of more than {MAX_DIGITS} digits")
    return int(digits)


def _finite(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise ValueError(f"it holds a number too large for a float: {digits[:40]}")
    return value


def _not_a_number(name: str) -> Any:
    raise ValueError(f"it holds {name}, which is not a JSON number")


def _problem(responses: Sequence[Any]) -> str | None:
    """What makes these response bodies unusable to the scripted model, or None."""
    for i, body in enumerate(responses):
        where = f"response {i + 1}"
        if not isinstance(body, dict):
            return f"{where} is not an object"
        if body.get("type") == "error":
            continue
        content = body.get("content")
        if not isinstance(content, list):
            return f"{where} has no 'content' array"
        for n, block in enumerate(content):
            wrong = _block_problem(block)
            if wrong is not None:
                return f"{where}, content block {n + 1}: {wrong}"
    return None


def _block_problem(block: Any) -> str | None:
    """What is wrong with one content block, as the Messages API shapes it, or None.

    Text needs its text; a tool use (client, server or MCP) a string id and name and an
    object input. Other block types pass through untouched, as the API adds them."""
    if not isinstance(block, dict):
        return "it is not an object"
    kind = block.get("type")
    if not isinstance(kind, str):
        return "it has no 'type'"
    if kind == "text" and not isinstance(block.get("text"), str):
        return "'text' must be a string"
    if kind in messages_api.TOOL_USE_TYPES:
        for field in ("id", "name"):
            if not isinstance(block.get(field), str):
                return f"'{field}' must be a string"
        if not isinstance(block.get("input"), dict):
            return "'input' must be an object"
    return None
