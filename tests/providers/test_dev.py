"""The dev model (providers/dev.py): an assistant's own tools called one by one with sample
input, then a Markdown answer of what each returned, streamed at a reader's pace."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest

from turnkeeper import Assistant, Card, Limits, ToolContext, tool
from turnkeeper.errors import ConfigError
from turnkeeper.providers.demo import DemoProvider
from turnkeeper.providers.dev import PACE, REAL_MODEL, ROUNDS, DevProvider, code, short
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.providers.select import choose_provider
from turnkeeper.tools.functions import FunctionToolset, Tool, function_tool
from turnkeeper.turn.approvals import Resume
from turnkeeper.turn.loop import TurnResult, run_turn
from turnkeeper.turn.setting import TurnSetting
from turnkeeper.wire import ToolSpec

FAST = 5000.0
"""A pace for tests: words a second."""


def order_status(
    ctx: ToolContext, order_id: Annotated[str, pydantic.Field(examples=["A-1001"])]
) -> str:
    """Where an order is."""
    return f"{order_id}: shipped"


def size_chart(size: str, fit: str = "regular") -> Card:
    """The chart of one size."""
    return Card(f"Size {size}", {"Fit": fit})


def strict(code: Annotated[str, pydantic.Field(min_length=5, max_length=2)]) -> str:
    """A tool no input satisfies."""
    return "never"


@tool(needs_approval=True, ask="Cancel an order")
def cancel_order(order_id: Annotated[str, pydantic.Field(examples=["A-1002"])]) -> str:
    """Cancel an order."""
    return f"{order_id} cancelled"


async def turn(*tools: Any, setting: TurnSetting | None = None) -> TurnResult:
    provider = DevProvider(pace=FAST)
    toolset = FunctionToolset([t if isinstance(t, Tool) else function_tool(t) for t in tools])
    return await run_turn("hello", provider=provider, toolset=toolset, setting=setting)


def assistant_messages(result: TurnResult) -> list[dict[str, Any]]:
    return [m for m in result.history if m["role"] == "assistant"]


async def test_it_calls_each_tool_in_turn_with_sample_input_then_says_what_came_back() -> None:
    result = await turn(order_status, size_chart)
    assert result.state.status == "finished"
    first, second, last = assistant_messages(result)
    [use] = first["content"]
    assert (use["name"], use["input"]) == ("order_status", {"order_id": "A-1001"})
    [use] = second["content"]
    assert (use["name"], use["input"]) == ("size_chart", {"size": "example"})
    assert [b["type"] for b in last["content"]] == ["text"]
    stops = [json.loads(json.dumps(r)) for r in result.trace.to_json()["calls"]]
    assert [c["response"]["stop_reason"] for c in stops] == ["tool_use", "tool_use", "end_turn"]
    answer = result.state.messages[-1].text
    assert answer == "\n".join(
        [
            "I am turnkeeper's **dev model**, offline: I called each tool with sample input.",
            "",
            '- **order\\_status** `{"order_id": "A-1001"}` → `A-1001: shipped`',
            '- **size\\_chart** `{"size": "example"}` → '
            '`{"title":"Size example","fields":[{"label":"Fit","value":"regular"}],"columns":…`',
            "",
            REAL_MODEL,
        ]
    )
    assert [b.role for b in result.state.messages] == ["user", "bot", "bot"], "a card bubble"
    assert result.state.messages[1].card is not None


async def test_a_tool_it_cannot_satisfy_answers_an_error_and_the_turn_goes_on() -> None:
    result = await turn(strict, order_status)
    assert result.state.status == "finished"
    [first, *_] = assistant_messages(result)
    assert first["content"][0]["input"] == {"code": "example"}
    results = [
        b for m in result.history if m["role"] == "user" for b in m["content"] if "is_error" in b
    ]
    assert [b["tool_use_id"] for b in results] == [first["content"][0]["id"]]
    answer = result.state.messages[-1].text or ""
    assert '- **strict** `{"code": "example"}` → error: `' in answer
    assert "- **order\\_status**" in answer, "the next tool was still called"


async def test_a_tool_that_needs_approval_makes_the_turn_wait_for_a_person() -> None:
    gate = Resume(frozenset({"cancel_order"}))
    result = await turn(order_status, cancel_order, setting=TurnSetting(resume=gate))
    assert result.outcome is None
    assert result.state.status == "waiting"
    [approval] = result.state.approvals
    assert (approval.tool, approval.input) == ("cancel_order", {"order_id": "A-1002"})


async def test_without_tools_it_says_so_and_ends_the_turn() -> None:
    result = await turn()
    assert result.state.status == "finished"
    assert "This assistant has no tools" in (result.state.messages[-1].text or "")


async def test_a_new_question_in_the_same_conversation_calls_every_tool_again() -> None:
    first = await turn(order_status)
    provider = DevProvider(pace=FAST)
    toolset = FunctionToolset([function_tool(order_status)])
    again = await run_turn("again", provider=provider, toolset=toolset, history=first.history)
    assert again.state.status == "finished"
    assert provider.calls == 2
    ids = [b["id"] for m in assistant_messages(again) for b in m["content"] if "id" in b]
    assert len(ids) == len(set(ids)) == 2, "tool use ids stay unique in a conversation"


async def test_more_tools_than_a_turns_rounds_are_called_several_at_a_time() -> None:
    many = [function_tool(order_status, name=f"tool_{n}") for n in range(ROUNDS * 2 + 1)]
    result = await turn(*many)
    assert result.state.status == "finished"
    called = [b["name"] for m in assistant_messages(result) for b in m["content"] if "name" in b]
    assert called == [t.spec.name for t in many]
    assert len(assistant_messages(result)) <= ROUNDS + 1


async def test_its_usage_is_an_estimate_and_costs_nothing() -> None:
    result = await turn(order_status)
    assert result.usage.input_tokens > 0
    assert result.usage.output_tokens > 0
    assert not result.usage.cost_usd


async def test_its_answer_streams_word_by_word_at_its_pace() -> None:
    provider = DevProvider(pace=200)
    loop = asyncio.get_running_loop()
    arrived: list[tuple[float, str]] = []
    reply = await provider.complete(
        [{"role": "user", "content": "hi"}],
        [],
        10,
        on_text=lambda t: arrived.append((loop.time(), t)),
    )
    assert "".join(t for _, t in arrived) == reply.text
    assert len(arrived) > 10
    assert all(t.strip() for _, t in arrived), "word-sized pieces"
    assert arrived[-1][0] - arrived[0][0] >= (len(arrived) - 1) / 200 * 0.9
    asks = await provider.complete([{"role": "user", "content": "hi"}], [ToolSpec("t", "")], 10)
    assert asks.text == ""
    assert [u.name for u in asks.tool_uses] == ["t"]


async def test_a_short_timeout_hurries_it() -> None:
    provider = DevProvider(pace=1)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await provider.complete([{"role": "user", "content": "hi"}], [], 1.0, on_text=lambda _: None)
    assert loop.time() - began < 2.0, "at most half the timeout thinking, half streaming"


def test_it_is_chosen_by_name_with_a_pace_from_the_caller_or_the_environment() -> None:
    assert choose_provider("dev", None, {}).describe() == {
        "provider": "dev",
        "model": "dev",
        "pace": PACE,
    }
    chosen = choose_provider("dev", None, {"TURNKEEPER_DEV_PACE": "120"})
    assert isinstance(chosen, DevProvider)
    assert chosen.pace == 120
    chosen = choose_provider("dev", None, {"TURNKEEPER_DEV_PACE": "120"}, dev_pace=7)
    assert isinstance(chosen, DevProvider)
    assert chosen.pace == 7
    chosen = choose_provider(None, None, {"TURNKEEPER_PROVIDER": "dev"})
    assert isinstance(chosen, DevProvider)
    mine = Assistant(provider="dev", tools=[order_status]).choose_provider({}, dev_pace=90)
    assert isinstance(mine, DevProvider)
    assert mine.pace == 90
    for wrong in ("0", "-3", "fast", "nan", "inf"):
        with pytest.raises(ConfigError, match="TURNKEEPER_DEV_PACE"):
            choose_provider("dev", None, {"TURNKEEPER_DEV_PACE": wrong})
    with pytest.raises(ConfigError, match="pace"):
        DevProvider(pace=0)


def test_a_served_demo_streams_at_the_same_pace_and_a_terminal_one_at_once() -> None:
    served = choose_provider("demo", None, {}, demo_pause=1.0)
    assert isinstance(served, DemoProvider)
    assert served.gap == pytest.approx(1 / PACE)
    paced = choose_provider("demo", None, {}, demo_pause=1.0, dev_pace=100)
    assert isinstance(paced, DemoProvider)
    assert paced.gap == pytest.approx(0.01)
    terminal = choose_provider("demo", None, {})
    assert isinstance(terminal, DemoProvider)
    assert terminal.gap == 0


def test_a_result_is_shown_short_on_one_line_in_a_code_span_that_holds_its_backticks() -> None:
    assert short("a\n  b\tc") == "a b c"
    assert short("x" * 100, 10) == "x" * 9 + "…"
    assert code("plain") == "`plain`"
    assert code("a `tick` here") == "``a `tick` here``"
    assert code("`edge") == "`` `edge ``"


def test_run_provider_dev_works_offline_and_calls_read_file(tmp_path: Path) -> None:
    """`turnkeeper run --provider dev`, no key: the dev model calls `run`'s `read_file` with
    its schema's example path, and the answer says what came back."""
    (tmp_path / "todo.txt").write_text("hello from the file", encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    command = [sys.executable, "-m", "turnkeeper", "run", "--provider", "dev", "--json"]
    done = subprocess.run(
        [*command, "--dev-pace", "1000", "--root", str(tmp_path), "what can you do?"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["status"] == "finished"
    answer = state["messages"][-1]["text"]
    assert '- **read\\_file** `{"path": "todo.txt"}` → `hello from the file`' in answer
    refused = subprocess.run(
        [*command, "--dev-pace", "0", "hi"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "'0' is not a positive number of words a second" in refused.stderr


def test_a_cap_on_cost_does_not_stop_an_assistant_served_on_an_offline_model() -> None:
    capped = Assistant(tools=[order_status], limits=Limits(cost_per_day=1.0))
    capped.check_limits(DevProvider())
    capped.check_limits(DemoProvider())
    with pytest.raises(ConfigError, match="'my-own' has no price"):
        capped.check_limits(ScriptedProviderNamed())


class ScriptedProviderNamed(ScriptedProvider):
    """A model of one's own whose name no price table knows."""

    def __init__(self) -> None:
        super().__init__([])

    def describe(self) -> dict[str, Any]:
        return {"provider": "mine", "model": "my-own"}
