"""Turns that wait and resume across processes (docs/design.md §11): an approved turn
resumed by a worker in another process, and, with `--resume-after-crash`, a turn whose
process was killed with SIGKILL during its tools, finished from its last checkpoint by
the next process without asking the model again. Real `turnkeeper serve` and `worker`
processes against a fake Messages API; SQLite embedded and PostgreSQL with a worker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, tool_use
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import eventually
from turnkeeper.cli import timeline
from turnkeeper.observe.report import Report
from turnkeeper.providers import messages_api
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token, open_store
from turnkeeper.turn.resume import Resuming

APPS = str(Path(__file__).resolve().parent / "apps")
APP = ["payments:assistant", "--app-dir", APPS, "--provider", "anthropic"]


@contextmanager
def model_env(
    script: list[Any], tool_log: Path
) -> Iterator[tuple[FakeModelServer, dict[str, str]]]:
    with FakeModelServer(script) as model:
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test-not-real",
            "ANTHROPIC_BASE_URL": model.url,
            "TK_TOOL_LOG": str(tool_log),
        }
        yield model, env


def runs(tool_log: Path) -> list[str]:
    return tool_log.read_text().split() if tool_log.exists() else []


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.auth: dict[str, str] = {}

    async def post(self, path: str, body: Any = None) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.base, timeout=10) as client:
            return await client.post(path, json=body, headers=self.auth)

    async def ask(self, text: str) -> str:
        created = (await self.post("/api/conversations")).json()
        self.auth = {"authorization": f"Bearer {created['token']}"}
        path = f"/api/conversations/{created['conversation_id']}/turns"
        sent = await self.post(path, {"text": text})
        assert sent.status_code == 202
        return str(sent.json()["turn_id"])

    async def state(self, turn_id: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.base, timeout=10) as client:
            body: dict[str, Any] = (
                await client.get(f"/api/turns/{turn_id}", headers=self.auth)
            ).json()
        return body

    async def until(self, turn_id: str, done: bool, bound: float = 30) -> dict[str, Any]:
        """The state once it is done (or waiting, if not `done`)."""
        seen: dict[str, Any] = {}

        async def reached() -> bool:
            seen.update(await self.state(turn_id))
            return bool(seen["done"]) if done else seen["status"] == "waiting"

        await eventually(reached, "the turn to finish" if done else "the turn to wait", bound)
        return seen


def served(
    stack: ExitStack, url: str, env: dict[str, str], tmp_path: Path, *extra: str
) -> tuple[str, Any]:
    """`serve` on `url` (no worker if PostgreSQL), and its log."""
    port = free_port()
    no_worker = ["--no-worker"] if url.startswith("postgresql") else []
    log = tmp_path / f"serve-{port}.log"
    process = stack.enter_context(
        turnkeeper(
            "serve", *APP, *no_worker, *extra, "--database", url, "--port", str(port),
            log=log, env=env,
        )
    )  # fmt: skip
    return f"http://127.0.0.1:{port}", (process, log)


@pytest.mark.postgres
@pytest.mark.parametrize("approved", [True, False])
async def test_a_worker_in_another_process_resumes_a_decided_turn(
    postgres_database: str, tmp_path: Path, approved: bool
) -> None:
    from tests.databases import fresh_schema

    tool_log = tmp_path / "tools.log"
    script = [asks(tool_use("delete_file", {"path": "notes.txt"}, id="toolu_del")), answer("OK.")]
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model, env = stack.enter_context(model_env(script, tool_log))
        base, (api_process, serve_log) = served(stack, url, env, tmp_path)
        await until_up(base, api_process, serve_log)
        worker_log = tmp_path / "worker.log"
        stack.enter_context(turnkeeper("worker", *APP, "--database", url, log=worker_log, env=env))
        api = Api(base)
        turn_id = await api.ask("delete my notes")
        waiting = await api.until(turn_id, done=False)
        assert waiting["approvals"][0]["key"] == "activity.delete_file"
        assert runs(tool_log) == []
        decided = await api.post(
            f"/api/turns/{turn_id}/approvals", {"tool_use_id": "toolu_del", "approved": approved}
        )
        assert decided.status_code == 202
        final = await api.until(turn_id, done=True)
    assert final["status"] == "finished", output(worker_log)
    assert runs(tool_log) == (["delete_file"] if approved else [])
    assert len(model.requests) == 2, "the model is asked once per response"
    result = model.requests[1]["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_del"
    assert bool(result.get("is_error")) is not approved


CRASH_SCRIPT = [
    asks(
        tool_use("look_up", {"query": "the price"}, id="toolu_look"),
        tool_use("charge", {"amount": 500}, id="toolu_charge"),
    ),
    answer("Charged, I think."),
]


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("resume", [True, False])
async def test_a_turn_killed_during_its_tools_resumes_only_if_asked_to(
    store: str, resume: bool, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    tool_log = tmp_path / "tools.log"
    flags = ["--lease", "1", *(["--resume-after-crash"] if resume else [])]
    with ExitStack() as stack:
        if store == "sqlite":
            url = f"sqlite:///{tmp_path / 'tk.db'}"
        else:
            from tests.databases import fresh_schema

            url = stack.enter_context(fresh_schema(request.getfixturevalue("postgres_database")))
        model, env = stack.enter_context(model_env(list(CRASH_SCRIPT), tool_log))
        base, (first, log) = served(stack, url, env, tmp_path, *flags)
        await until_up(base, first, log)
        doomed = first
        if store == "postgres":
            worker_log = tmp_path / "worker-1.log"
            doomed = stack.enter_context(
                turnkeeper("worker", *APP, *flags, "--database", url, log=worker_log, env=env)
            )
        api = Api(base)
        turn_id = await api.ask("charge me for it")

        async def both_tools_started() -> bool:
            return sorted(model.tool_starts) == ["charge", "look_up"]

        await eventually(both_tools_started, "both tools to start", bound=30)
        doomed.kill()
        doomed.wait()
        if store == "sqlite":  # the serving process itself died: start it again
            base, (again, log) = served(stack, url, env, tmp_path, *flags)
            await until_up(base, again, log)
            api.base = base
        else:  # another worker takes the turn
            worker_log = tmp_path / "worker-2.log"
            stack.enter_context(
                turnkeeper("worker", *APP, *flags, "--database", url, log=worker_log, env=env)
            )
        final = await api.until(turn_id, done=True)
        stored = await open_store(url)
        shown = timeline.render(
            timeline.stored_rows(await stored.iterations(turn_id)), final["status"]
        )
        await stored.close()
    if not resume:
        assert final["status"] == "failed"
        assert len(model.requests) == 1, "a turn is tried once: nothing runs again"
        assert sorted(runs(tool_log)) == ["charge", "look_up"]
        return
    assert final["status"] == "finished", output(log)
    assert final["messages"][-1]["text"] == "Charged, I think."
    assert len(model.requests) == 2, "the call before the kill is not repeated"
    assert runs(tool_log).count("look_up") == 2, "the idempotent tool ran again"
    assert runs(tool_log).count("charge") == 1, "the other tool never runs twice"
    looked, charged = model.requests[1]["messages"][-1]["content"]
    assert looked["content"] == "found the price"
    assert charged["is_error"] is True
    assert "interrupted" in charged["content"]
    assert "may or may not have run" in charged["content"]
    assert "resumed after a crash (resume 1)" in shown, "the trace records the resume"


class Held:
    def __init__(self) -> None:
        self.turn_ids: list[str] = []

    async def enqueue(self, turn_id: str) -> None:
        self.turn_ids.append(turn_id)


async def test_a_turn_resumes_at_most_max_resumes_times_then_fails_with_a_report(
    store: Store,
) -> None:
    conversation = await store.create_conversation(new_token()[1])
    turn_id = (await store.create_turn(conversation, "pay it")).turn_id
    reports: list[Report] = []
    queue = Held()
    resuming = Resuming(resume_after_crash=True, max_resumes=1)
    sweeper = Sweeper(store, reporter=reports.append, resuming=resuming, requeue=queue)

    async def expired() -> bool:
        return turn_id in await store.expired()

    assert await store.claim(turn_id, 0.01, messages_api.WIRE.name) is not None
    await eventually(expired, "the lease to expire")
    assert await sweeper.sweep() == [], "resumed, not finalised"
    assert queue.turn_ids == [turn_id]
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"]) == ("queued", False)
    assert await store.claim(turn_id, 0.01, messages_api.WIRE.name) is not None, "a new job"
    await eventually(expired, "the second lease to expire")
    assert await sweeper.sweep() == [turn_id]
    assert queue.turn_ids == [turn_id], "not queued a second time"
    final = await store.state_after(turn_id, 0)
    assert final is not None
    assert (final["status"], final["done"]) == ("failed", True)
    assert [r.event for r in reports] == ["resumed", "resume_refused", "failed"]
    assert "after 1 resumes" in reports[1].message
