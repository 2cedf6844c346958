"""The demo model: the todo question goes through `read_file`; anything else gets one short
message saying how to configure a real model."""

from __future__ import annotations

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
