"""Deleting is final, over HTTP (issue 52, item 1): `DELETE /api/conversations/{id}?stop=1`
while the conversation's turn is at each point of its run answers `204`, and once the
stopped turn's job is over no row of the conversation is left in any table; a new
conversation given the same id (`POST /api/chat`) starts empty: its model is sent only
its own question. On both stores; the job runs in the app's process here (a worker of
its own on PostgreSQL: tests/faults/test_deleting_with_a_worker.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tests import scripts
from tests.api.test_routes import client_for, start_turn
from tests.databases import rows_left
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.providers import TextSink, messages_api
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.resume import Resuming
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec


class Recording:
    """A model that streams each scripted response's text, the first half before it waits
    for its gate (opened for one call), and keeps the history each call was sent."""

    wire = messages_api.WIRE

    def __init__(self, responses: Sequence[dict[str, Any]]) -> None:
        self.responses = list(responses)
        self.sent: list[list[Message]] = []
        self.gate = asyncio.Event()

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.sent.append(list(history))
        response = self.responses.pop(0)
        text = "".join(b.get("text", "") for b in response["content"])
        if on_text is not None and text:
            on_text(text[: len(text) // 2])
        await self.gate.wait()
        self.gate.clear()
        if on_text is not None and text:
            on_text(text[len(text) // 2 :])
        return messages_api.parse_reply(response)

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {"provider": "recording"}


def tools(running: asyncio.Event, release: asyncio.Event) -> FunctionToolset:
    """`slow`, which runs until `release`; `erase`, which waits for a person's yes;
    `lookup`, which answers at once."""

    async def slow(args: dict[str, Any]) -> str:
        running.set()
        await release.wait()
        return "done"

    return FunctionToolset(
        [
            Tool(ToolSpec("slow", "Takes a while."), slow),
            Tool(ToolSpec("erase", "Erases a note."), lambda args: "erased"),
            Tool(ToolSpec("lookup", "Looks it up."), lambda args: "found"),
        ]
    )


POINTS = {
    "answer streaming": [scripts.answer("the first user's secret answer")],
    "tool running": [scripts.asks(scripts.tool_use("slow")), scripts.answer("never")],
    "second call": [scripts.asks(scripts.tool_use("lookup")), scripts.answer("the secret")],
    "waiting for a person": [scripts.asks(scripts.tool_use("erase"))],
}
"""Where the turn is when its conversation is deleted, and what its model answers."""


async def reached(point: str, store: Store, turn_id: str, model: Recording, tool: Any) -> None:
    """Until the turn is at `point`, the writes before it made."""

    async def there() -> bool:
        events = [e.type for e in await store.events_after(turn_id, 0)]
        if point == "answer streaming":
            return "text.delta" in events
        if point == "tool running":
            return tool.is_set() and "tool.started" in events
        if point == "second call":
            return len(model.sent) == 2 and "tool.ended" in events
        return "turn.waiting" in events

    if point != "answer streaming":
        model.gate.set()  # the first call answers (the second, if any, waits)
    await eventually(there, f"the turn at {point}")


@pytest.mark.parametrize("point", list(POINTS))
async def test_a_conversation_deleted_mid_turn_leaves_no_row_and_its_id_starts_empty(
    store: Store, store_url: str, point: str
) -> None:
    model = Recording(POINTS[point])
    running, release = asyncio.Event(), asyncio.Event()
    waits = Resuming(needs_approval=frozenset({"erase"}))
    queue = LocalQueue(TurnJob(store, model, tools(running, release), resuming=waits))
    async with client_for(create_app(store, queue)) as client:
        turn_id, auth = await start_turn(client, "the first user's question")
        await reached(point, store, turn_id, model, running)
        turn = await store.turn(turn_id)
        assert turn is not None
        path = f"/api/conversations/{turn.conversation_id}"
        response = await client.delete(path, params={"stop": "1"}, headers=auth)
        assert response.status_code == 204
        model.gate.set()
        release.set()
        await asyncio.wait_for(queue.join(), 15)
        assert rows_left(store_url) == {}, f"rows of the deleted conversation, at {point}"

        model.responses = [scripts.answer("hello, second user")]
        model.gate.set()
        question = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
        chat = await client.post(
            "/api/chat", json={"id": turn.conversation_id, "messages": [question]}
        )
        assert chat.status_code == 200
        await asyncio.wait_for(queue.join(), 15)
    assert model.sent[-1] == [messages_api.user_message("hello")], "the new one starts empty"
