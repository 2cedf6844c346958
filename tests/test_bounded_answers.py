"""Bounded answers (issue 32, item 3): a response whose content passes `max_response`
(default 4 MiB) fails its turn with `errors.ai_too_large`, is read no further, and
nothing of it is kept; a 50 MB answer does not grow `serve`'s resident memory by more
than 20 MB (nor its peak by more than 30 MB).

A model server of its own here: it streams (or sends whole) an answer of any size
without holding it, a 64 KiB delta at a time."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench.local_server import LocalServer

from tests.providers.wire_server import WireServer, json_response
from tests.scripts import answer
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import eventually
from turnkeeper.errors import ResponseTooLarge
from turnkeeper.providers.anthropic import AnthropicProvider

MB = 1024 * 1024
CHUNK = "x" * (64 * 1024)


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def huge_stream(size: int) -> Iterator[bytes]:
    """A Messages API event stream whose one text block holds `size` bytes."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    message: dict[str, Any] = {"id": "msg_huge", "type": "message", "role": "assistant"}
    message |= {"model": "m", "content": [], "stop_reason": None, "usage": usage}
    yield sse({"type": "message_start", "message": message})
    block = {"type": "text", "text": ""}
    yield sse({"type": "content_block_start", "index": 0, "content_block": block})
    for _ in range(size // len(CHUNK)):
        delta = {"type": "text_delta", "text": CHUNK}
        yield sse({"type": "content_block_delta", "index": 0, "delta": delta})
    yield sse({"type": "content_block_stop", "index": 0})
    ending = {"stop_reason": "end_turn", "stop_sequence": None}
    yield sse({"type": "message_delta", "delta": ending, "usage": {"output_tokens": 9}})
    yield sse({"type": "message_stop"})


@contextmanager
def sizing_model(sizes: list[int]) -> Iterator[str]:
    """A Messages API that answers its n-th call with a streamed text of `sizes[n]` bytes."""
    calls = iter(sizes)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            try:
                for part in huge_stream(next(calls)):
                    self.wfile.write(part)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what a bounded reader does

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with LocalServer(Handler) as server:
        yield server.url


def memory(pid: int) -> dict[str, int]:
    """The process's resident memory now and at its peak, in bytes."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


async def asked(client: httpx.AsyncClient) -> dict[str, Any]:
    created = (await client.post("/api/conversations")).json()
    auth = {"authorization": f"Bearer {created['token']}"}
    path = f"/api/conversations/{created['conversation_id']}/turns"
    turn_id = (await client.post(path, json={"text": "say a lot"}, headers=auth)).json()["turn_id"]
    state: dict[str, Any] = {}

    async def done() -> bool:
        state.update((await client.get(f"/api/turns/{turn_id}", headers=auth)).json())
        return bool(state["done"])

    await eventually(done, "the turn to end", bound=60)
    return state


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
async def test_a_50_mb_answer_is_refused_with_its_notice_and_costs_serve_no_memory(
    tmp_path: Path,
) -> None:
    database = tmp_path / "tk.db"
    with sizing_model([64 * 1024, 50 * MB]) as model_url:
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test-not-real",
            "ANTHROPIC_BASE_URL": model_url,
        }
        port, log = free_port(), tmp_path / "serve.log"
        command = ["serve", "--provider", "anthropic", "--database", f"sqlite:///{database}",
                   "--port", str(port)]  # fmt: skip
        with turnkeeper(*command, log=log, env=env) as process:
            base = f"http://127.0.0.1:{port}"
            await until_up(base, process, log)
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                warm = await asked(client)  # every module a turn needs is loaded
                before = memory(process.pid)
                refused = await asked(client)
                after = memory(process.pid)
    assert warm["status"] == "finished", output(log)
    assert (refused["status"], refused["has_error"]) == ("failed", True)
    assert refused["messages"][-1] == {
        "id": "m2", "role": "bot", "key": "errors.ai_too_large", "is_error": True,
    }  # fmt: skip
    grew, peaked = after["VmRSS"] - before["VmRSS"], after["VmHWM"] - before["VmRSS"]
    assert grew < 20 * MB, f"serve's resident memory grew by {grew / MB:.1f} MB"
    assert peaked < 30 * MB, f"serve's memory peaked {peaked / MB:.1f} MB higher"
    assert CHUNK * 2 not in database.read_text(errors="replace"), "nothing of it kept"
    assert "errors.ai_too_large" not in output(log) or "ResponseTooLarge" in output(log)


async def test_a_plain_answer_over_the_cap_is_refused_unread(server: WireServer) -> None:
    server.add(json_response(answer("y" * 5000)))
    provider = AnthropicProvider(
        api_key="sk-test-not-real", base_url=server.url, stream=False, max_response=4096
    )
    with pytest.raises(ResponseTooLarge, match="passed 4,096 bytes"):
        await provider.complete([{"role": "user", "content": "hi"}], [], 10)
    await provider.aclose()
