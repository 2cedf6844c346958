"""The scripted model: Messages API response bodies returned in order.

Deterministic and offline; the demo, the CLI's `--script`, replay and the
tests run on it. It fails loudly: asking for more responses than it holds ends
the turn as `failed` with a message that says so, and `unused` tells what a
turn left behind.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ProviderUnavailable, ScriptExhausted
from ..i18n import counted
from ..wire import Message, Reply, ToolResult, ToolSpec
from . import messages_api


class ScriptedProvider:
    """Returns the given response bodies in order, one per model call."""

    wire = messages_api.WIRE

    def __init__(self, responses: Sequence[Any], *, delay: float = 0.0) -> None:
        self._responses = [_checked(i, r) for i, r in enumerate(responses)]
        self._next = 0
        self.delay = delay
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
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"script {path} is not valid JSON: {e}") from e
        if not isinstance(data, list):
            raise ConfigError(f"script {path} must be a JSON array of response bodies")
        if not data:
            raise ConfigError(f"script {path} holds no responses: the model would have no answer")
        return cls(data)

    @property
    def unused(self) -> int:
        """How many responses no call asked for."""
        return len(self._responses) - self._next

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
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
        return messages_api.parse_reply(body)

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {"provider": "scripted", "responses": len(self._responses)}


def _checked(index: int, body: Any) -> dict[str, Any]:
    """A response body as the scripted model needs it, or `ConfigError` saying what is wrong."""
    where = f"script response {index + 1}"
    if not isinstance(body, dict):
        raise ConfigError(f"{where} is not a JSON object")
    if body.get("type") == "error":
        return body
    content = body.get("content")
    if not isinstance(content, list):
        raise ConfigError(f"{where} has no 'content' array")
    for n, block in enumerate(content):
        if not (isinstance(block, dict) and isinstance(block.get("type"), str)):
            raise ConfigError(f"{where}: content block {n + 1} has no 'type'")
    return body
