"""Sync tools on reused daemon threads: answers, errors, context, slow and hung tools."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.waiting import eventually
from turnkeeper.tools import threads
from turnkeeper.tools.threads import in_thread

WAIT = 10.0
"""The bound on every wait for another task or thread; never reached when the code is right."""

REPO = Path(__file__).resolve().parents[2]
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event a blocked sync function waits on; set at teardown so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


async def test_a_quick_function_answers_with_its_value_error_and_the_callers_context() -> None:
    def fails(_: object) -> str:
        raise ValueError("no such key")

    request_id.set("r-1")
    assert await in_thread(lambda arg: f"{arg} in {request_id.get()}", "called") == "called in r-1"
    with pytest.raises(ValueError, match="no such key"):
        await in_thread(fails, None)


async def test_a_slow_function_is_parked_and_the_event_loop_goes_on(
    release: threading.Event,
) -> None:
    def waits(_: object) -> str:
        return "released" if release.wait(WAIT) else "never released"

    call = asyncio.create_task(in_thread(waits, None))
    await asyncio.sleep(0)  # the call is under way: the loop runs this task again
    assert not call.done()
    assert waits in threads._slow, "a call past the grace marks its function slow"
    release.set()
    assert await asyncio.wait_for(call, WAIT) == "released"


async def test_a_slow_function_that_becomes_quick_gets_the_grace_again(
    release: threading.Event,
) -> None:
    def maybe_waits(wait: bool) -> str:
        return "waited" if not wait or release.wait(WAIT) else "never released"

    slow = asyncio.create_task(in_thread(maybe_waits, True))
    await asyncio.sleep(0)
    assert maybe_waits in threads._slow
    release.set()
    assert await asyncio.wait_for(slow, WAIT) == "waited"

    async def quick_again() -> bool:
        # A call counts as quick when it ran within the grace; a busy machine may
        # hold a thread up once in a while, so ask again until one call was.
        return await in_thread(maybe_waits, False) == "waited" and maybe_waits not in threads._slow

    await eventually(quick_again, "a quick call of the once slow function")


async def test_a_caller_that_gives_up_leaves_the_worker_free_for_the_next_call(
    release: threading.Event,
) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await in_thread(lambda _: release.wait(WAIT), None)
    assert await asyncio.wait_for(in_thread(str.upper, "next"), WAIT) == "NEXT"


HUNG_TOOL_TURN = textwrap.dedent(
    """
    import asyncio, threading
    from turnkeeper import Budget, LocalHooks, ScriptedProvider, run_turn
    from turnkeeper.tools.functions import FunctionToolset, tool
    from tests.scripts import answer, asks, tool_use

    @tool
    def hangs() -> str:
        \"\"\"Never returns.\"\"\"
        threading.Event().wait()
        return "unreachable"

    async def main() -> None:
        provider = ScriptedProvider([asks(tool_use("hangs", {})), answer("gave up")])
        result = await run_turn(
            "go", provider=provider, toolset=FunctionToolset([hangs]),
            budget=Budget(tool_timeout=0.05), hooks=LocalHooks(reporter=lambda r: None),
        )
        print(result.outcome.value, flush=True)

    asyncio.run(main())
    """
)


def test_a_hung_sync_tool_never_hangs_the_process_at_exit() -> None:
    run = subprocess.run(
        [sys.executable, "-c", HUNG_TOOL_TURN],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "finished"
