"""The demo model: the todo question goes through `read_file`; anything else gets one short
message saying how to configure a real model, streamed word by word."""

from __future__ import annotations

import asyncio
from typing import Any

from turnkeeper.assistant import demo_assistant
from turnkeeper.providers.demo import DemoProvider
from turnkeeper.turn.loop import run_turn


async def ask(question: str) -> tuple[str, list[dict[str, Any]], int]:
    provider = DemoProvider()
    result = await run_turn(question, provider=provider, toolset=demo_assistant().toolset())
    return result.state.status, result.state.to_json()["messages"][1:], provider.calls


async def test_the_todo_question_is_answered_through_read_file() -> None:
    outcome, bubbles, calls = await ask("What's on my todo list?")
    assert (outcome, calls) == ("finished", 2)
    assert bubbles == [{"id": "m2", "role": "bot", "text": "your todos: write tests"}]


async def test_anything_else_says_in_one_message_how_to_configure_a_real_model() -> None:
    outcome, bubbles, calls = await ask("hello, who are you?")
    assert (outcome, calls) == ("finished", 1)
    [bubble] = bubbles
    text = bubble["text"]
    assert "demo model" in text
    assert "ANTHROPIC_API_KEY" in text
    assert "OPENAI_BASE_URL" in text
    assert "--provider" in text
    assert len(text) < 300


async def test_its_answer_is_streamed_word_by_word_and_joins_to_the_reply() -> None:
    provider = DemoProvider()
    pieces: list[str] = []
    reply = await provider.complete(
        [{"role": "user", "content": "hello"}], [], 10, on_text=pieces.append
    )
    assert len(pieces) > 10
    assert "".join(pieces) == reply.text
    assert reply.text.startswith("I am turnkeeper's offline demo model")
    assert all(p.strip() for p in pieces), "word-sized pieces, no empty or blank ones"


async def test_a_tool_call_streams_no_text_and_a_gap_spaces_the_pieces() -> None:
    question = [{"role": "user", "content": "what's on my todo list?"}]
    pieces: list[str] = []
    asks = await DemoProvider().complete(question, [], 10, on_text=pieces.append)
    assert [u.name for u in asks.tool_uses] == ["read_file"]
    assert pieces == []
    loop = asyncio.get_running_loop()
    arrived: list[float] = []
    await DemoProvider(gap=0.01).complete(
        [{"role": "user", "content": "hi"}], [], 10, on_text=lambda _: arrived.append(loop.time())
    )
    assert arrived[-1] - arrived[0] >= 0.01 * (len(arrived) - 1) * 0.9
