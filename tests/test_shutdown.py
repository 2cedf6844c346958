"""SIGINT and SIGTERM: running turns get a grace period, then are finalised; nothing is left
`running`, and the conversation takes its next question at once after a restart.

Real `turnkeeper serve` and `worker` processes; the model is the OpenAI adapter
talking to the wire server, whose answer the test holds back or releases.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from tests.providers.wire_server import Canned, WireServer, replayed, serving
from tests.test_server import free_port, output, until_up
from tests.waiting import eventually
from turnkeeper.providers.demo import DemoProvider
from turnkeeper.store import hash_token, held_by, open_store
from turnkeeper.turn.lifecycle import fail

TEXT = "vercel__ai/openai__chat__openai-text.json"


def held() -> Canned:
    """The answer, its body held back until the model server closes."""
    return replace(replayed(TEXT), hold=True)


@contextmanager
def process(*args: str, log: Path, model: WireServer) -> Iterator[subprocess.Popen[bytes]]:
    """`turnkeeper ARGS` on the OpenAI adapter pointed at `model`; killed if still running."""
    environ = {**os.environ, "TURNKEEPER_PROVIDER": "openai"}
    environ |= {"OPENAI_BASE_URL": f"{model.url}/v1", "OPENAI_API_KEY": "sk-test"}
    with log.open("ab") as out:
        running = subprocess.Popen(
            [sys.executable, "-m", "turnkeeper", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )
        try:
            yield running
        finally:
            if running.poll() is None:
                running.kill()
            running.wait()


class Client:
    """One conversation over the HTTP API (a connection per request: servers come and go)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.auth: dict[str, str] = {}
        self.conversation = ""

    @classmethod
    async def opened(cls, base: str) -> Client:
        client = cls(base)
        created = (await client.request("POST", "/api/conversations")).json()
        client.auth = {"authorization": f"Bearer {created['token']}"}
        client.conversation = created["conversation_id"]
        return client

    async def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.base, timeout=10) as http:
            return await http.request(method, path, headers=self.auth, **options)

    async def ask(self, text: str = "hello?") -> httpx.Response:
        path = f"/api/conversations/{self.conversation}/turns"
        return await self.request("POST", path, json={"text": text})

    async def state(self, turn_id: str) -> dict[str, Any]:
        response = await self.request("GET", f"/api/turns/{turn_id}")
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found


async def asked(model: WireServer, count: int = 1) -> None:
    async def arrived() -> bool:
        return len(model.requests) >= count

    await eventually(arrived, "the model call reaching the model")


async def exited(running: subprocess.Popen[bytes], log: Path) -> int:
    async def gone() -> bool:
        return running.poll() is not None

    await eventually(gone, f"the process exiting; its log: {output(log)}", bound=30)
    return running.returncode


def serve_args(tmp_path: Path, port: int, *extra: str) -> list[str]:
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    return ["serve", "--database", database, "--port", str(port), *extra]


async def test_serve_lets_a_running_turn_finish_and_answers_polls_meanwhile(
    tmp_path: Path,
) -> None:
    gate = threading.Event()
    port, log = free_port(), tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with serving(replace(replayed(TEXT), gate=gate), replayed(TEXT)) as model:
        with process(*serve_args(tmp_path, port), log=log, model=model) as server:
            await until_up(base, server, log)
            client = await Client.opened(base)
            turn_id = (await client.ask()).json()["turn_id"]
            await asked(model)
            server.send_signal(signal.SIGTERM)

            async def stopping() -> bool:
                return "waiting up to 10 s for 1 turn" in output(log)

            await eventually(stopping, "the server saying it is stopping")
            during = await client.state(turn_id)
            gate.set()
            assert await exited(server, log) == 0, output(log)
        with process(*serve_args(tmp_path, port), log=log, model=model) as server:
            await until_up(base, server, log)
            after = await client.state(turn_id)
            next_turn = await client.ask()
    banner = output(log).splitlines()[:12]
    assert banner[0] == "turnkeeper 0.1.0 serve"
    assert banner[1] == f"  address      {base}"
    assert banner[2] == "  app          the demo assistant"
    assert banner[3] == "  mode         embedded (turns run in this process, 4 at once)"
    assert banner[4] == f"  model        openai gpt-4.1-mini at {model.url}/v1/"
    assert banner[5] == f"  database     sqlite:///{tmp_path / 'tk.db'}"
    assert banner[6].startswith("  tools        read_file in ")
    assert banner[6].endswith("(the demo folder)")
    assert banner[7:] == [
        "  MCP servers  none",
        "  locales      en, es",
        "  users        a token per conversation",
        "  lease        30 s",
        "  deadline     180 s per turn; 10 s grace on shutdown",
    ]
    assert during["status"] == "running"
    assert f"turn {turn_id} ended: finished" in output(log), "shutdown says how it ended"
    assert after["status"] == "finished"
    assert after["done"] is True
    assert next_turn.status_code == 202


async def test_stopping_with_no_turn_running_says_nothing_of_a_grace(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with serving() as model, process(*serve_args(tmp_path, port), log=log, model=model) as server:
        await until_up(base, server, log)
        server.send_signal(signal.SIGTERM)
        assert await exited(server, log) == 0, output(log)
    said = output(log).split("  deadline")[1].splitlines()[1:]  # what follows the banner
    assert any("SIGTERM: stopping; no turn is running" in line for line in said), said
    assert not any("grace" in line or " s for " in line or " get " in line for line in said)


async def test_a_turn_still_running_after_the_grace_is_finalised_as_failed(
    tmp_path: Path,
) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    args = serve_args(tmp_path, port, "--grace", "0.5")
    with serving(held(), replayed(TEXT)) as model:
        with process(*args, log=log, model=model) as server:
            await until_up(base, server, log)
            client = await Client.opened(base)
            turn_id = (await client.ask()).json()["turn_id"]
            await asked(model)
            server.send_signal(signal.SIGINT)
            assert await exited(server, log) == 0, output(log)
        with process(*args, log=log, model=model) as server:
            await until_up(base, server, log)
            after = await client.state(turn_id)
            next_turn = await client.ask()
    assert after["status"] == "failed"
    assert f"turn {turn_id} ended: failed" in output(log), "shutdown says how it ended"
    assert after["done"] is True
    assert after["messages"][-1]["key"] == "errors.ai_failed"
    assert "failed: the turn failed: the process stopped it before it finished" in output(log)
    assert next_turn.status_code == 202


async def test_a_worker_finalises_its_running_turn_on_sigterm(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
    with fresh_schema(postgres_database) as url, serving(held()) as model:
        secret = url.replace("postgresql://postgres@", "postgresql://postgres:hunter2@", 1)
        api = ("serve", "--no-worker", "--database", secret, "--port", str(port))
        with process(*api, log=serve_log, model=model) as server:
            await until_up(base, server, serve_log)
            work = ("worker", "--database", secret, "--grace", "0.5")
            with process(*work, log=worker_log, model=model) as worker:
                client = await Client.opened(base)
                turn_id = (await client.ask()).json()["turn_id"]
                await asked(model)
                worker.send_signal(signal.SIGTERM)
                assert await exited(worker, worker_log) == 0, output(worker_log)
            after = await client.state(turn_id)
            next_turn = await client.ask()
    assert after["status"] == "failed", output(worker_log)
    assert after["done"] is True
    assert next_turn.status_code == 202
    assert "stopping: waiting up to 0.5 s for 1 turn" in output(worker_log)
    assert f"turn {turn_id} ended: failed" in output(worker_log), "shutdown says how it ended"
    banner = output(worker_log)
    assert "mode         distributed worker" in banner
    assert "postgres:***@" in banner
    assert "hunter2" not in banner + output(serve_log)


async def test_a_turn_whose_cancel_was_accepted_is_finalised_as_stopped(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'tk.db'}")
    conversation = await store.create_conversation(hash_token("t"))
    turn = await store.create_turn(conversation, "q")
    fence = await store.claim(turn.turn_id, 30, DemoProvider.wire.name)
    await store.request_cancel(turn.turn_id)
    assert fence is not None
    assert await fail(store, turn.turn_id, held_by(fence))
    state = await store.state_after(turn.turn_id, 0)
    next_turn = await store.create_turn(conversation, "again")
    await store.close()
    assert state is not None
    assert (state["status"], state["done"], state["stopped"]) == ("stopped", True, True)
    assert state["has_error"] is False
    stopped = {"id": "m2", "role": "bot", "key": "notices.stopped", "is_error": False}
    assert state["messages"][-1] == stopped
    assert next_turn.turn_id != turn.turn_id
