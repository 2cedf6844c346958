"""A model server that echoes the credentials it was sent (issue 32, item 2): the API key
and the base URL's user-info, as given and as HTTP Basic encodes it, in its text, in a
tool's input (which the tool echoes once more) and in its streamed deltas. None of them
reaches the database, the published state, the transcript, the event log, a trace file,
the logs or what the command line prints; the answer keeps every block, the secret's
place marked `***`.

Real `turnkeeper serve` and `turnkeeper run` processes against a fake Messages API."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, tool_use
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import eventually
from turnkeeper.credentials import SecretStream, keep_secret

KEY = "sk-ant-echoed-7c1f0e9d8b2a4c6e"
USER, PASSWORD = "echo-user", "pw-echoed-98765"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = (KEY, PASSWORD, BASIC)
APPS = str(Path(__file__).resolve().parent / "apps")


def echoed(headers: dict[str, str]) -> str:
    """What the server was sent: its `authorization` header, and the key (the SDK sends no
    `x-api-key` beside a base URL's user-info, so the server says the key it knows)."""
    return f"key {headers.get('x-api-key', KEY)} auth {headers.get('authorization')}"


def echo_asks(headers: dict[str, str]) -> dict[str, Any]:
    return asks(tool_use("echo", {"text": echoed(headers)}), say=f"I got {echoed(headers)}.")


def echo_answer(headers: dict[str, str]) -> dict[str, Any]:
    return answer(f"**Done.** You sent {echoed(headers)}; the tool agreed.")


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


async def test_echoed_credentials_are_stored_published_traced_and_printed_nowhere(
    tmp_path: Path,
) -> None:
    database = tmp_path / "tk.db"
    url = f"sqlite:///{database}"
    script = [echo_asks, echo_answer, echo_answer]
    with ExitStack() as stack, FakeModelServer(script) as model:
        base_url = model.url.replace("http://", f"http://{USER}:{PASSWORD}@")
        env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": base_url}
        port, log = free_port(), tmp_path / "serve.log"
        app = ["echoing:assistant", "--app-dir", APPS, "--provider", "anthropic"]
        command = ["serve", *app, "--database", url, "--port", str(port)]
        process = stack.enter_context(turnkeeper(*command, log=log, env=env))
        base = f"http://127.0.0.1:{port}"
        await until_up(base, process, log)
        turn_id, state, transcript = await asked(base)
        shown = cli(["trace", "show", turn_id, "--database", url], env)
        shown += cli(["trace", "show", turn_id, "--database", url, "--json"], env)
        trace = tmp_path / "run.trace.json"
        printed = cli(["run", "what did I send?", "--provider", "anthropic", "--trace",
                       str(trace)], env)  # fmt: skip
    stored = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("tk.db*")))  # noqa: ASYNC240
    stored_text = stored.decode(errors="replace")
    assert len(model.requests) == 3
    published = json.dumps(state)
    assert "key *** auth Basic ***" in published, "the echo's place is marked"
    assert state["messages"][-1]["text"].startswith("**Done.** You sent key ***")
    artefacts = {
        "the database": stored_text,
        "the state": published,
        "the transcript": json.dumps(transcript),
        "serve's log": output(log),
        "trace show": shown,
        "run's output": printed,
        "the trace file": trace.read_text(),
    }
    assert {name: leaks(text) for name, text in artefacts.items() if leaks(text)} == {}
    assert "***" in printed
    assert "***" in artefacts["the trace file"]


async def asked(base: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """One question through the API: its turn's id, its final state and the transcript."""
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        created = (await client.post("/api/conversations")).json()
        auth = {"authorization": f"Bearer {created['token']}"}
        conversation = created["conversation_id"]
        sent = await client.post(
            f"/api/conversations/{conversation}/turns", json={"text": "echo"}, headers=auth
        )
        turn_id = sent.json()["turn_id"]
        state: dict[str, Any] = {}

        async def done() -> bool:
            state.update((await client.get(f"/api/turns/{turn_id}", headers=auth)).json())
            return bool(state["done"])

        await eventually(done, "the turn to end", bound=30)
        transcript = (await client.get(f"/api/conversations/{conversation}", headers=auth)).json()
    assert state["status"] == "finished", state
    return turn_id, state, transcript


def cli(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "turnkeeper", *args], capture_output=True, env=env, timeout=60
    )
    return done.stdout.decode() + done.stderr.decode()


def test_a_secret_split_across_streamed_pieces_is_hidden_and_nothing_else_changes() -> None:
    keep_secret("sk-split-secret-123")
    stream = SecretStream()
    pieces = ["Your key is sk-sp", "lit-sec", "ret-123 and ", "sk-other-1 stays."]
    passed = "".join(stream.feed(p) for p in pieces) + stream.end()
    assert passed == "Your key is *** and sk-other-1 stays."
