"""Prometheus metrics: what a process's turns, model calls, tools and sweeper add up to."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.models import GatedModel
from tests.providers.wire_server import recording
from tests.scripts import answer, asks, tool_use, usage
from tests.waiting import eventually
from turnkeeper import LocalHooks, ScriptedProvider, run_turn
from turnkeeper.observe.metrics import Metrics
from turnkeeper.providers import TextSink, chat_api
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, by name and labels."""
    text = metrics.exposition().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def tools() -> FunctionToolset:
    def broken(args: object) -> str:
        raise RuntimeError("nope")

    return FunctionToolset(
        [
            Tool(ToolSpec("lookup", "Look it up."), lambda args: "found"),
            Tool(ToolSpec("broken", "Fails."), broken),
        ]
    )


async def test_a_turn_counts_its_outcome_calls_tokens_tools_and_cost() -> None:
    metrics = Metrics()
    first = asks(tool_use("lookup"), tool_use("broken"))
    first["usage"] = usage(1_000, 100, cache_read_input_tokens=500)
    last = answer("done", usage=usage(2_000, 50), model="claude-haiku-4-5")
    await run_turn(
        "q",
        provider=ScriptedProvider([first, last]),
        toolset=tools(),
        hooks=LocalHooks(reporter=lambda r: None),
        watcher=metrics,
    )
    got = samples(metrics)
    assert got[("turnkeeper_turns_total", (("outcome", "finished"),))] == 1
    assert got[("turnkeeper_turns_total", (("outcome", "failed"),))] == 0
    assert got[("turnkeeper_model_calls_total", (("outcome", "ok"),))] == 2
    assert got[("turnkeeper_model_call_duration_seconds_count", ())] == 2
    assert got[("turnkeeper_tokens_total", (("kind", "input"),))] == 3_000
    assert got[("turnkeeper_tokens_total", (("kind", "output"),))] == 150
    assert got[("turnkeeper_tokens_total", (("kind", "cache_read"),))] == 500
    assert got[("turnkeeper_tool_calls_total", (("outcome", "ok"), ("tool", "lookup")))] == 1
    assert got[("turnkeeper_tool_calls_total", (("outcome", "error"), ("tool", "broken")))] == 1
    assert got[("turnkeeper_turns_in_flight", ())] == 0
    # only the second call's model has a price: 2000 * $1 + 50 * $5 per million
    assert got[("turnkeeper_cost_usd_total", ())] == 0.00225


async def test_each_metrics_has_its_own_registry() -> None:
    one, two = Metrics(), Metrics()
    await run_turn(
        "q",
        provider=ScriptedProvider([answer("x")]),
        hooks=LocalHooks(reporter=lambda r: None),
        watcher=one,
    )
    assert samples(one)[("turnkeeper_turns_total", (("outcome", "finished"),))] == 1
    assert samples(two)[("turnkeeper_turns_total", (("outcome", "finished"),))] == 0


async def test_the_sweeper_counts_the_turns_it_finalises(store: Store) -> None:
    metrics = Metrics()
    conversation_id = await store.create_conversation(new_token()[1])
    turn = await store.create_turn(conversation_id, "q")
    assert await store.claim(turn.turn_id, 0.001, "anthropic") is not None

    async def expired() -> bool:
        return turn.turn_id in await store.expired()

    await eventually(expired, "the lease expiring")
    assert await Sweeper(store, reporter=lambda r: None, metrics=metrics).sweep() == [turn.turn_id]
    assert samples(metrics)[("turnkeeper_sweeper_finalised_total", ())] == 1


async def test_a_tool_cut_off_by_its_timeout_counts_as_an_error() -> None:
    import asyncio

    from turnkeeper.budget import Budget

    async def hangs(args: object) -> str:
        await asyncio.Event().wait()
        return "never"

    metrics = Metrics()
    await run_turn(
        "q",
        provider=ScriptedProvider([asks(tool_use("hangs")), answer("x")]),
        toolset=FunctionToolset([Tool(ToolSpec("hangs", "Hangs."), hangs)]),
        budget=Budget(tool_timeout=0.05),
        hooks=LocalHooks(reporter=lambda r: None),
        watcher=metrics,
    )
    got = samples(metrics)
    assert got[("turnkeeper_tool_calls_total", (("outcome", "error"), ("tool", "hangs")))] == 1


async def test_a_call_a_stop_aborted_counts_as_stopped_not_as_an_error() -> None:
    hooks = LocalHooks(reporter=lambda report: None)
    model = GatedModel([answer("the answer the reader tried to stop")])
    metrics = Metrics()
    running = asyncio.create_task(
        run_turn("take your time", provider=model, hooks=hooks, watcher=metrics)
    )
    await model.started.wait()
    hooks.stop()
    async with asyncio.timeout(10):
        result = await running
    assert result.state.status == "stopped"
    seen = samples(metrics)
    assert seen[("turnkeeper_model_calls_total", (("outcome", "stopped"),))] == 1
    assert ("turnkeeper_model_calls_total", (("outcome", "error"),)) not in seen
    assert seen[("turnkeeper_turns_total", (("outcome", "stopped"),))] == 1
    assert seen[("turnkeeper_turns_in_flight", ())] == 0


class ChatScripted:
    """Real Chat Completions bodies answered in order, read by the OpenAI adapter's wire
    functions (what `OpenAIProvider` does after the HTTP call)."""

    wire = chat_api.WIRE

    def __init__(self, bodies: list[dict[str, Any]]) -> None:
        self.bodies = bodies

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        return chat_api.parse_reply(self.bodies.pop(0))

    def user_message(self, text: str) -> Message:
        return chat_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return chat_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {"provider": "openai", "model": "grok-3-mini"}


async def test_the_caches_tokens_are_kinds_of_their_own_whatever_the_provider() -> None:
    """Anthropic writes and reads; an OpenAI-compatible server's cached prompt tokens (a real
    response: 244 of its 291) are reads, counted out of its input, never twice."""
    metrics = Metrics()
    first = asks(tool_use("lookup"))
    first["usage"] = usage(10, 5, cache_creation_input_tokens=6_000)
    last = answer("done", usage=usage(10, 5, cache_read_input_tokens=6_010))
    hooks = LocalHooks(reporter=lambda r: None)
    await run_turn(
        "q", provider=ScriptedProvider([first, last]), toolset=tools(), hooks=hooks,
        watcher=metrics,
    )  # fmt: skip
    real = recording("vercel__ai/xai__xai-tool-call.json")["response"]["body"]
    text = recording("vercel__ai/openai__chat__openai-text.json")["response"]["body"]
    chat = ChatScripted([real, text])
    await run_turn("q", provider=chat, toolset=tools(), hooks=hooks, watcher=metrics)
    got = samples(metrics)
    assert got[("turnkeeper_tokens_total", (("kind", "cache_write"),))] == 6_000
    assert got[("turnkeeper_tokens_total", (("kind", "cache_read"),))] == 6_010 + 244
    assert got[("turnkeeper_tokens_total", (("kind", "input"),))] == 20 + (291 - 244) + 16
