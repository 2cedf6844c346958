"""The crash matrix: a process killed with SIGKILL at each point of a turn.

SQLite: the embedded `turnkeeper serve` process; PostgreSQL: `turnkeeper worker`
on procrastinate. The process is paused at the point (`tests/crash_process.py`,
or the model server holding the call), killed, and the sweeper takes over once
the one-second lease has expired. Every point after the first call is in the
second iteration, so the kill finds a checkpoint to keep. For each point: exactly
one terminal state, `lifecycle.fail()` once (one report), no model call repeated, no
checkpointed message lost.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import scripts
from tests.fake_model import HOLD, FakeModelServer
from tests.scripts import assert_valid_history
from tests.test_server import free_port
from tests.waiting import eventually
from turnkeeper.observe.report import Report
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token

REPO = Path(__file__).resolve().parents[2]
LEASE = "1"

MODEL_CALL = "during a model call"
CALLS_MADE = {
    "before the first call": 0,
    MODEL_CALL: 2,
    "between the call and its checkpoint": 2,
    "during a tool call": 2,
    "during finalisation": 3,
}
"""Model calls made when the process is killed at each point: never one more after. Every
point after the first call is in the second iteration, with the first one checkpointed."""

CHECKPOINTED = {
    "before the first call": 0,
    MODEL_CALL: 3,
    "between the call and its checkpoint": 3,
    "during a tool call": 3,
    "during finalisation": 5,
}
"""History messages stored when the process is killed: the question, then each finished
iteration's call and tool results."""


@contextmanager
def turnkeeper(
    point: str, ready: Path, url: str, model_url: str, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The serving process for `url`'s store, paused at `point`."""
    command = ["serve", "--port", str(free_port())] if url.startswith("sqlite") else ["worker"]
    command += ["--database", url, "--lease", LEASE, "--provider", "anthropic"]
    environ = {**os.environ, "ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "sk-test"}
    hook = "none" if point == MODEL_CALL else point
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_process", hook, str(ready), *command],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


async def queued(store: Store, url: str) -> tuple[str, str]:
    conversation_id = await store.create_conversation(new_token()[1])
    turn_id = (await store.create_turn(conversation_id, "what is on my list?")).turn_id
    if url.startswith("postgresql"):
        from turnkeeper.service.worker import ProcrastinateQueue

        async with ProcrastinateQueue(url) as queue:
            await queue.enqueue(turn_id)
    return conversation_id, turn_id  # the embedded serve process enqueues it as it starts


async def paused(point: str, ready: Path, model: FakeModelServer, process: Any, log: Path) -> None:
    async def there() -> bool:
        assert process.poll() is None, await asyncio.to_thread(log.read_text, errors="replace")
        if point == MODEL_CALL:
            return len(model.requests) == 2
        return await asyncio.to_thread(ready.exists)

    await eventually(there, f"the process paused {point}", bound=30)


async def finalised(store: Store, turn_id: str, reports: list[Report]) -> dict[str, Any]:
    sweeper = Sweeper(store, reporter=reports.append)

    async def done() -> bool:
        await sweeper.sweep()
        turn = await store.turn(turn_id)
        return turn is not None and turn.done

    await eventually(done, "the sweeper finalising the killed process's turn", bound=30)
    assert await sweeper.sweep() == [], "one terminal state: nothing left to finalise"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    return state


@pytest.mark.parametrize("point", list(CALLS_MADE))
async def test_a_process_killed_at_each_point_loses_nothing(
    own_store: Store, own_store_url: str, point: str, tmp_path: Path
) -> None:
    store = own_store
    conversation_id, turn_id = await queued(store, own_store_url)
    first, second = (
        scripts.asks(scripts.tool_use("read_file", {"path": "todo.txt"}, id=f"toolu_{n}"))
        for n in ("read", "again")
    )
    script: list[Any] = [first, second, scripts.answer("milk and eggs")]
    if point == MODEL_CALL:
        script.insert(1, HOLD)  # the second call is held
    ready, log = tmp_path / "ready", tmp_path / "process.log"
    with FakeModelServer(script) as model:
        with turnkeeper(point, ready, own_store_url, model.url, log) as process:
            await paused(point, ready, model, process, log)
            before = await store.history(conversation_id)
            assert len(before) == CHECKPOINTED[point], before
            process.send_signal(signal.SIGKILL)
            process.wait(15)
        reports: list[Report] = []
        state = await finalised(store, turn_id, reports)
        assert len(model.requests) == CALLS_MADE[point], "no model call repeated"

    assert (state["status"], state["done"], state["activity"]) == ("failed", True, None)
    assert [r.event for r in reports] == ["failed"], "fail() ran once: one report"
    assert state["messages"][0]["text"] == "what is on my list?"
    history = await store.history(conversation_id)
    assert history[: len(before)] == before, "every checkpointed message kept"
    assert history[0] == {"role": "user", "content": "what is on my list?"}
    assert_valid_history(history)
    assert (await store.create_turn(conversation_id, "and now?")).version == 1
