"""The seam the answer's text leaves a call through: `complete(..., on_text=...)`.

The scripted model streams its scripted text in word-sized pieces (optionally spaced out);
`takes_text` tells a provider written before the seam from one that takes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tests import scripts
from turnkeeper.errors import ProviderUnavailable
from turnkeeper.providers import takes_text
from turnkeeper.providers.demo import DemoProvider
from turnkeeper.providers.scripted import ScriptedProvider, pieces
from turnkeeper.wire import Message, Reply, ToolSpec

QUESTION = [{"role": "user", "content": "q"}]


@pytest.mark.parametrize(
    "text", ["", "one", "two words", "  leading and trailing  ", "lines\nand\ttabs \n\n end"]
)
def test_pieces_join_to_the_text_word_by_word(text: str) -> None:
    found = pieces(text)
    assert "".join(found) == text
    assert all(p for p in found)
    assert len(found) == len(text.split()) + (1 if text[:1].isspace() else 0)


async def test_the_scripted_model_streams_its_text_then_answers() -> None:
    body = scripts.body(
        [scripts.text("First block, two."), scripts.tool_use("t"), scripts.text("Second.")],
        "tool_use",
    )
    received: list[str] = []
    reply = await ScriptedProvider([body]).complete(QUESTION, [], 10, on_text=received.append)
    assert received == ["First ", "block, ", "two.\n", "Second."]
    assert "".join(received) == reply.text == "First block, two.\nSecond."


async def test_the_scripted_gap_spaces_the_pieces_and_none_means_no_wait() -> None:
    answer = scripts.answer("a b c d e f")
    loop = asyncio.get_running_loop()
    arrived: list[float] = []
    await ScriptedProvider([answer], gap=0.02).complete(
        QUESTION, [], 10, on_text=lambda _: arrived.append(loop.time())
    )
    assert len(arrived) == 6
    assert arrived[-1] - arrived[0] >= 0.02 * 5 * 0.9
    started = loop.time()
    await ScriptedProvider([answer] * 50).complete(QUESTION, [], 10, on_text=lambda _: None)
    assert loop.time() - started < 0.5


async def test_a_scripted_error_or_a_late_answer_streams_nothing() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    received: list[str] = []
    with pytest.raises(ProviderUnavailable):
        await ScriptedProvider([error]).complete(QUESTION, [], 10, on_text=received.append)
    slow = ScriptedProvider([scripts.answer("too late")], delay=0.2)
    with pytest.raises(ProviderUnavailable):
        await slow.complete(QUESTION, [], 0.05, on_text=received.append)
    assert received == []


async def test_cancelling_a_scripted_stream_stops_it_between_pieces() -> None:
    provider = ScriptedProvider([scripts.answer("one two three four five")], gap=10)
    received: list[str] = []
    first = asyncio.Event()

    def on_text(piece: str) -> None:
        received.append(piece)
        first.set()

    call = asyncio.create_task(provider.complete(QUESTION, [], 60, on_text=on_text))
    await asyncio.wait_for(first.wait(), 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert received == ["one "]


class Older:
    """A provider of one's own written before the seam."""

    wire = ScriptedProvider.wire

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        raise NotImplementedError


class Open(Older):
    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float, **more: Any
    ) -> Reply:
        raise NotImplementedError


def test_takes_text_tells_a_provider_written_before_the_seam() -> None:
    assert takes_text(ScriptedProvider([]))
    assert takes_text(Open())  # type: ignore[arg-type]
    assert not takes_text(Older())  # type: ignore[arg-type]
    assert takes_text(DemoProvider())
