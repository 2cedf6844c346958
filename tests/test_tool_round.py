"""A round of one tool: run in the turn's task up to its first wait (`FirstStep`), a timer
armed only for a tool that waits, and the round's timeout as before for one that does."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.scripts import answer, asks, tool_use
from turnkeeper import Budget, LocalHooks, Outcome, ScriptedProvider, run_turn
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.tool_round import FirstStep
from turnkeeper.wire import ToolSpec

QUESTION = "What now?"


async def one_tool_turn(tool: Tool, budget: Budget | None = None) -> Any:
    hooks = LocalHooks(reporter=lambda report: None)
    result = await run_turn(
        QUESTION,
        provider=ScriptedProvider([asks(tool_use(tool.spec.name)), answer("ok")]),
        toolset=FunctionToolset([tool]),
        budget=budget,
        hooks=hooks,
    )
    assert result.outcome is Outcome.FINISHED
    return result.history[2]["content"][0]


async def test_a_lone_tool_that_waits_past_the_round_timeout_is_answered_unfinished() -> None:
    async def stuck(args: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "never"

    block = await one_tool_turn(Tool(ToolSpec("stuck", ""), stuck), Budget(tool_timeout=0.05))
    assert block["is_error"] is True
    assert block["content"].startswith("stuck did not finish within")


async def test_a_lone_tool_that_waits_and_answers_in_time_keeps_its_answer() -> None:
    async def slow(args: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.01, future.set_result, "late but here")
        return str(await future)

    block = await one_tool_turn(Tool(ToolSpec("slow", ""), slow), Budget(tool_timeout=5.0))
    assert block == {
        "type": "tool_result",
        "tool_use_id": block["tool_use_id"],
        "content": "late but here",
    }


async def test_a_coroutine_that_never_waits_is_done_at_its_first_step() -> None:
    async def instant() -> str:
        return "at once"

    step = FirstStep(instant())
    assert (step.done, step.result) == (True, "at once")


async def test_a_stepped_coroutine_gets_what_its_waits_give_and_answers() -> None:
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def adds() -> int:
        await asyncio.sleep(0)
        return await future + 1

    step = FirstStep(adds())
    assert not step.done
    asyncio.get_running_loop().call_soon(future.set_result, 41)
    assert await step == 42


async def test_a_cancel_while_a_stepped_coroutine_waits_reaches_it() -> None:
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def runs() -> None:
        step = FirstStep(waits())
        await step

    task = asyncio.ensure_future(runs())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()
    assert seen == ["cancelled"]
