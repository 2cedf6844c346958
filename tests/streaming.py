"""A scripted model that streams: each response's text handed to `on_text` in pieces, with
gaps between them, before the response is returned (or the stream dropped)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from turnkeeper.errors import ProviderUnavailable
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.wire import Message, Reply, ToolSpec


def pieces_of(text: str, count: int) -> list[str]:
    """`text` cut into `count` pieces (fewer if it is shorter), in order."""
    size = max(1, -(-len(text) // max(count, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)]


class StreamingScript(ScriptedProvider):
    """Scripted responses whose text streams in `pieces` pieces, `gap` seconds apart; with
    `drop` set, the stream of that call (counted from 0) is dropped after its text."""

    def __init__(
        self,
        responses: Sequence[Any],
        *,
        pieces: int = 5,
        gap: float = 0.0,
        drop: int | None = None,
        streamed: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(responses)
        self.pieces = pieces
        self.gap = gap
        self.drop = drop
        self.streamed = streamed

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        call = self._next
        if on_text is not None and call < len(self._responses):
            text = "\n".join(
                b["text"] for b in self._responses[call]["content"] if b["type"] == "text"
            )
            for piece in pieces_of(text, self.pieces):
                on_text(piece)
                if self.streamed is not None:
                    self.streamed(piece)
                if self.gap:
                    await asyncio.sleep(self.gap)
                else:
                    await asyncio.sleep(0)
        if call == self.drop:
            self._next += 1
            raise ProviderUnavailable("the model's stream was dropped")
        return await super().complete(history, tools, timeout)
