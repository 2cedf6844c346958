"""The demo model: the todo question goes through `read_file`; anything else gets one short
message saying how to configure a real model, streamed word by word."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from turnkeeper.assistant import demo_assistant
from turnkeeper.cli.loading import load
from turnkeeper.providers.demo import DemoProvider, Where
from turnkeeper.turn.loop import run_turn
from turnkeeper.wire import ToolSpec

REPO = Path(__file__).resolve().parents[2]


async def ask(
    question: str, provider: DemoProvider | None = None
) -> tuple[str, list[dict[str, Any]], int]:
    provider = provider or DemoProvider()
    result = await run_turn(question, provider=provider, toolset=demo_assistant().toolset())
    return result.state.status, result.state.to_json()["messages"][1:], provider.calls


async def test_the_todo_question_is_answered_through_read_file() -> None:
    outcome, bubbles, calls = await ask("What's on my todo list?")
    assert (outcome, calls) == ("finished", 2)
    assert bubbles == [{"id": "m2", "role": "bot", "text": "your todos: write tests"}]


@pytest.mark.parametrize(
    ("where", "says", "never"),
    [
        (Where.SERVE, "restart `turnkeeper serve`", "run again"),
        (Where.WORKER, "restart `turnkeeper worker`", "turnkeeper serve"),
        (Where.RUN, "run again with --provider anthropic", "restart"),
        (Where.APP, "start the application again", "turnkeeper serve"),
    ],
)
async def test_anything_else_says_in_one_message_how_to_configure_a_real_model_where_it_runs(
    where: Where, says: str, never: str
) -> None:
    outcome, bubbles, calls = await ask("hello, who are you?", DemoProvider(where=where))
    assert (outcome, calls) == ("finished", 1)
    [bubble] = bubbles
    text = bubble["text"]
    assert "offline demo model" in text
    assert "ANTHROPIC_API_KEY" in text
    assert "OPENAI_BASE_URL" in text
    assert says in text
    assert never not in text
    assert len(text) < 300


async def test_without_read_file_the_todo_question_gets_the_demo_answer_not_a_tool_call() -> None:
    """An application's assistant (the shop) has no `read_file`: asked the README's demo
    question, the demo model calls no tool it was not offered."""
    shop = load("shop:assistant", REPO / "examples" / "shop")
    provider = DemoProvider()
    result = await run_turn("what's on my todo list?", provider=provider, toolset=shop.toolset())
    [bubble] = result.state.to_json()["messages"][1:]
    assert (result.state.status, provider.calls) == ("finished", 1)
    assert "unknown tool" not in bubble["text"]
    assert bubble["text"].startswith("I am turnkeeper's offline demo model: I cannot answer")
    assert "start the application again with ANTHROPIC_API_KEY set" in bubble["text"]


def test_under_run_the_demo_model_says_how_to_choose_a_model_for_run(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "-m", "turnkeeper", "run", "--provider", "demo", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=environ,
    )
    assert done.returncode == 0, done.stderr
    assert "run again with --provider anthropic" in done.stdout
    assert "turnkeeper serve" not in done.stdout


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
    offered = [ToolSpec("read_file", "reads a file")]
    asks = await DemoProvider().complete(question, offered, 10, on_text=pieces.append)
    assert [u.name for u in asks.tool_uses] == ["read_file"]
    assert pieces == []
    loop = asyncio.get_running_loop()
    arrived: list[float] = []
    await DemoProvider(gap=0.01).complete(
        [{"role": "user", "content": "hi"}], [], 10, on_text=lambda _: arrived.append(loop.time())
    )
    assert arrived[-1] - arrived[0] >= 0.01 * (len(arrived) - 1) * 0.9
