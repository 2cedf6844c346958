"""Test models the test drives by hand: gated, or stubborn about cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from turnkeeper.providers import TextSink, messages_api
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec

LOOKUP = FunctionToolset([Tool(ToolSpec("lookup", "Look it up."), lambda args: "found")])


class GatedModel:
    """Scripted responses, each given only once the test opens the gate for it."""

    wire = messages_api.WIRE

    def __init__(self, responses: Sequence[dict[str, Any]]) -> None:
        self.responses = list(responses)
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.calls = 0

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.calls += 1
        self.started.set()
        await self.gate.wait()
        self.gate.clear()
        return messages_api.parse_reply(self.responses.pop(0))

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {"provider": "gated"}


class StubbornModel(GatedModel):
    """Ignores the first cancellation of its call, as a misbehaving SDK might."""

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.calls += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.Event().wait()
        raise AssertionError("not reached")
