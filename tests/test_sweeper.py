"""Workers that die or hang mid-turn: the sweeper finalises the turn, the fence stops the zombie.

Each test runs a real worker process (`worker_process.py`) on a real store,
against a model server the test controls, with one-second leases.
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
from tests.waiting import eventually
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token

REPO = Path(__file__).resolve().parents[1]
LEASE = 1.0


@contextmanager
def worker_process(store_url: str, turn_id: str, model_url: str, log: Path) -> Iterator[Any]:
    with log.open("w") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.worker_process",
                store_url,
                turn_id,
                model_url,
                str(LEASE),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate()


async def queued(store: Store) -> tuple[str, str]:
    conversation_id = await store.create_conversation(new_token()[1])
    return conversation_id, (await store.create_turn(conversation_id, "do the thing")).turn_id


async def sweep_until_done(store: Store, turn_id: str) -> dict[str, Any]:
    sweeper = Sweeper(store)

    async def done() -> bool:
        await sweeper.sweep()
        state = await store.state_after(turn_id, 0)
        return state is not None and bool(state["done"])

    await eventually(done, "the sweeper finalising the turn", bound=LEASE + 15)
    state = await store.state_after(turn_id, 0)
    assert state is not None
    return state


async def until(condition: Any, what: str) -> None:
    async def check() -> bool:
        return bool(condition())

    await eventually(check, what)


@pytest.mark.parametrize("during", ["model call", "tool call"])
async def test_a_killed_worker_is_finalised_by_the_sweeper(
    store: Store, store_url: str, during: str, tmp_path: Path
) -> None:
    conversation_id, turn_id = await queued(store)
    first = scripts.asks(scripts.tool_use("lookup", id="toolu_lookup"))
    second = HOLD if during == "model call" else scripts.asks(scripts.tool_use("slow_step"))
    with (
        FakeModelServer([first, second]) as model,
        worker_process(store_url, turn_id, model.url, tmp_path / "worker.log") as worker,
    ):
        if during == "model call":
            await until(lambda: len(model.requests) == 2, "the second model call")
        else:
            await until(lambda: model.tool_starts == ["slow_step"], "the slow tool starting")
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        state = await sweep_until_done(store, turn_id)
        assert len(model.requests) == 2, "the turn was never sent to the model again"

    assert (state["status"], state["done"], state["has_error"]) == ("failed", True, True)
    assert state["activity"] is None
    assert state["messages"][0] == {"id": "m1", "role": "user", "text": "do the thing"}
    assert state["messages"][-1]["key"] == "errors.ai_failed"
    calls_returned = 1 if during == "model call" else 2
    assert state["usage"]["iterations"] == calls_returned, "usage recorded as each call returned"
    assert state["usage"]["input_tokens"] == 10 * calls_returned
    history = await store.history(conversation_id)
    assert_valid_history(history)
    assert history == [
        {"role": "user", "content": "do the thing"},
        {"role": "assistant", "content": first["content"]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_lookup", "content": "found it"}
            ],
        },
    ]


async def test_a_paused_worker_is_fenced_out_when_it_resumes(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    conversation_id, turn_id = await queued(store)
    log = tmp_path / "worker.log"
    with (
        FakeModelServer([HOLD, scripts.answer("late answer")]) as model,
        worker_process(store_url, turn_id, model.url, log) as worker,
    ):
        await until(lambda: len(model.requests) == 1, "the model call")
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            finalised = await sweep_until_done(store, turn_id)
        finally:
            model.release()
            os.kill(worker.pid, signal.SIGCONT)
        out, _ = await asyncio.to_thread(worker.communicate, timeout=30)

    assert "outcome: None" in out, "the resumed worker knew it had lost the turn"
    assert "refused" in log.read_text()
    assert await store.state_after(turn_id, 0) == finalised
    assert finalised["status"] == "failed"
    assert "late answer" not in str(await store.history(conversation_id))
    assert len(model.requests) == 1
