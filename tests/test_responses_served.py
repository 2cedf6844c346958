"""The Responses provider served (issue 50, "Done when"): `serve --provider openai-responses`
and a worker (on PostgreSQL a `turnkeeper worker` process of its own) against a fake
Responses server (tests/responses_wire.py) that streams each body with a gap between its
events. One conversation asks four times: a tool loop with reasoning items (the reasoning
sent back on the next call), a tool that needs a person's yes, a cut answer, a refusal.
Then a chat through the AI SDK's UI message stream and a run through AG-UI, each answered
by a Responses turn: both protocols project its events as any provider's.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import responses_wire as rw
from tests.providers.wire_server import Canned, WireServer, json_response
from tests.sse import read_stream
from tests.test_resume import APPS, Api
from tests.test_server import free_port, output, turnkeeper, until_up

APP = ["payments:assistant", "--app-dir", APPS, "--provider", "openai-responses"]
GAP = 0.02
"""Seconds between a stream's events: the answer arrives in pieces, as a model writes it."""


def gapped(body: dict[str, Any]) -> Canned:
    """A body the fake server streams (the provider asks for a stream) event by event."""
    canned = json_response(body)
    return Canned(canned.status, canned.body, canned.headers, gap=GAP)


SCRIPT = [
    rw.response(rw.reasoning_item(1), rw.call_item("call_look", "look_up", '{"query": "rates"}')),
    rw.response(rw.text_item("Rates are up this week.")),
    rw.response(rw.reasoning_item(2), rw.call_item("call_del", "delete_file", '{"path": "a.txt"}')),
    rw.response(rw.text_item("Deleted it.")),
    rw.response(
        rw.text_item("The answer is proba"), status="incomplete", reason="max_output_tokens"
    ),
    rw.response(rw.refusal_item()),
    rw.response(rw.reasoning_item(3), rw.text_item("Hello from the chat protocol.")),
    rw.response(rw.text_item("Hello from AG-UI.")),
]


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_responses_tool_loop_served_on_both_stores(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    model = WireServer([gapped(b) for b in SCRIPT])
    model.start()
    env = {**os.environ, "OPENAI_BASE_URL": f"{model.url}/v1", "OPENAI_API_KEY": "sk-test"}
    env.pop("TK_TOOL_LOG", None)
    try:
        with ExitStack() as stack:
            url = _database(stack, store, tmp_path, request)
            base, log = await _serve(stack, url, env, tmp_path)
            await _conversation(Conversation(base), base, model, log)
            await _protocols(base)
    finally:
        model.close()


def _database(stack: ExitStack, store: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if store == "sqlite":
        return f"sqlite:///{tmp_path / 'tk.db'}"
    from tests.databases import fresh_schema

    url: str = stack.enter_context(fresh_schema(request.getfixturevalue("postgres_database")))
    return url


async def _serve(
    stack: ExitStack, url: str, env: dict[str, str], tmp_path: Path
) -> tuple[str, Path]:
    """`serve` on `url`; on PostgreSQL without its own worker, a worker process beside it."""
    port, log = free_port(), tmp_path / "serve.log"
    no_worker = ["--no-worker"] if url.startswith("postgresql") else []
    process = stack.enter_context(
        turnkeeper(
            "serve", *APP, *no_worker, "--database", url, "--port", str(port), log=log, env=env
        )
    )
    base = f"http://127.0.0.1:{port}"
    await until_up(base, process, log)
    if no_worker:
        worker_log = tmp_path / "worker.log"
        stack.enter_context(turnkeeper("worker", *APP, "--database", url, log=worker_log, env=env))
    return base, log


async def _conversation(api: Api, base: str, model: WireServer, log: Path) -> None:
    first = await api.ask("what are the rates?")
    ran = await read_stream(base, first, api.auth)
    assert ran.ended, output(log)
    state = await api.until(first, done=True)
    assert state["status"] == "finished", output(log)
    said = state["messages"][-1]
    assert said["text"] == "Rates are up this week."
    deltas = [e["data"]["delta"] for e in ran.events if e["event"] == "text.delta"]
    assert "".join(deltas) == said["text"]
    assert len(deltas) > 1  # streamed in pieces, not whole
    second = model.requests[1].body
    assert second["store"] is False
    assert second["input"][1] == rw.reasoning_item(1)  # the reasoning went back as it came
    assert second["input"][3]["type"] == "function_call_output"
    assert second["input"][3]["call_id"] == "call_look"
    await _approval(api, base, model, log)
    await _cut_and_refused(api, model)


async def _approval(api: Api, base: str, model: WireServer, log: Path) -> None:
    """The same conversation: a tool that needs a person's yes waits, then runs."""
    turn = await api.ask("delete a.txt")
    waiting = await api.until(turn, done=False)
    assert waiting["status"] == "waiting", output(log)
    decided = await api.post(
        f"/api/turns/{turn}/approvals", {"tool_use_id": "call_del", "approved": True}
    )
    assert decided.status_code == 202
    done = await api.until(turn, done=True)
    assert done["status"] == "finished", output(log)
    assert done["messages"][-1]["text"] == "Deleted it."
    resumed = model.requests[3].body["input"]
    # the whole conversation, reasoning of both turns included, in order
    assert [i.get("type") or i.get("role") for i in resumed] == [
        "user", "reasoning", "function_call", "function_call_output", "message",
        "user", "reasoning", "function_call", "function_call_output",
    ]  # fmt: skip
    assert resumed[0]["content"] == "what are the rates?"
    assert model.requests[0].body["prompt_cache_key"] == model.requests[3].body["prompt_cache_key"]


async def _cut_and_refused(api: Api, model: WireServer) -> None:
    cut = await api.until(await api.ask("explain"), done=True)
    assert (cut["status"], cut["has_error"]) == ("truncated", True)
    assert cut["messages"][-1]["key"] == "errors.ai_truncated"
    assert all("proba" not in str(m.get("text")) for m in cut["messages"])
    refused = await api.until(await api.ask("something else"), done=True)
    assert refused["status"] == "refused"
    assert refused["messages"][-1]["key"] == "errors.ai_refused"
    assert len(model.requests) == 6  # the refusal was not sent again


class Conversation(Api):
    """One conversation of the API: its first question opens it, the others go on in it."""

    path = ""

    async def ask(self, text: str) -> str:
        if not self.path:
            created = (await self.post("/api/conversations")).json()
            self.auth = {"authorization": f"Bearer {created['token']}"}
            self.path = f"/api/conversations/{created['conversation_id']}/turns"
        sent = await self.post(self.path, {"text": text})
        assert sent.status_code == 202, sent.text
        return str(sent.json()["turn_id"])


async def _protocols(base: str) -> None:
    """The AI SDK's UI message stream and AG-UI follow a Responses turn as any other."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        chat = await client.post("/api/chat", json={"id": "chat-responses", "messages": [message]})
        assert chat.status_code == 200, chat.text
        parts = _data(chat.text)
        deltas = "".join(p["delta"] for p in parts if p.get("type") == "text-delta")
        assert deltas == "Hello from the chat protocol."
        assert parts[-1].get("type") == "finish"
        question = {"id": "q1", "role": "user", "content": "hi"}
        run = {"threadId": "thread-responses", "runId": "run-1", "messages": [question]}
        ran = await client.post("/api/ag-ui", json=run)
        assert ran.status_code == 200, ran.text
        events = _data(ran.text)
        contents = [e["delta"] for e in events if e.get("type") == "TEXT_MESSAGE_CONTENT"]
        assert "".join(contents) == "Hello from AG-UI."
        assert events[-1]["type"] == "RUN_FINISHED"


def _data(text: str) -> list[dict[str, Any]]:
    """The JSON `data` of each server-sent event of a response body."""
    found = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            found.append(json.loads(line[5:]))
    return found
