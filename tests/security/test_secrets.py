"""API keys and URL credentials never appear in traces, logs, reports, stored turns or errors.

Each provider is pointed at the wire server through a base URL that carries a
user and password (`http://user:secret@host`), with an API key of its own; the
turn then runs through `TurnJob` on a SQLite store, and once more through
`run_turn` for its trace. Bodies are CONSTRUCTED from the API references: a
plain answer, and a 502 whose text body echoes the URL the way a proxy's error
page does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.providers.wire_server import Canned, WireServer, json_response
from turnkeeper import Budget, LocalHooks, run_turn
from turnkeeper.job import TurnJob
from turnkeeper.providers import Provider
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.openai import OpenAIProvider
from turnkeeper.report import log_report
from turnkeeper.store import hash_token, open_store

API_KEY = "sk-test-APIKEYSECRET-0123456789"
PASSWORD = "URLPASSWORD-s3cret"
SECRETS = (API_KEY, PASSWORD)

ANTHROPIC_ANSWER = {
    "id": "msg_constructed",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "hello"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
OPENAI_ANSWER = {
    "id": "chatcmpl-constructed",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-test",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "hello"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def anthropic(url: str) -> Provider:
    return AnthropicProvider(api_key=API_KEY, base_url=url, max_retries=0)


def openai(url: str) -> Provider:
    return OpenAIProvider(api_key=API_KEY, base_url=f"{url}/v1", max_retries=0)


PROVIDERS: dict[str, tuple[Callable[[str], Provider], dict[str, Any]]] = {
    "anthropic": (anthropic, ANTHROPIC_ANSWER),
    "openai": (openai, OPENAI_ANSWER),
}


def fault(kind: str, answer: dict[str, Any], url: str) -> Canned:
    if kind == "answer":
        return json_response(answer)
    echo = f"Bad gateway: upstream {url}/v1/messages did not answer".encode()
    return Canned(502, echo, {"content-type": "text/plain"})


def assert_no_secret(what: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{what} holds a secret: {text[:2000]}"


@pytest.mark.parametrize("kind", ["answer", "proxy-error", "refused"])
@pytest.mark.parametrize("name", list(PROVIDERS))
async def test_no_secret_is_written_anywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, kind: str
) -> None:
    make, answer = PROVIDERS[name]
    server = WireServer()
    server.start()
    try:
        port = server.port if kind != "refused" else closed_port()
        url = f"http://user:{PASSWORD}@127.0.0.1:{port}"
        server.add(fault(kind, answer, url), fault(kind, answer, url))
        caplog.set_level(logging.DEBUG)
        texts = await run_both_ways(tmp_path, make(url), make(url))
    finally:
        server.close()
    for what, text in texts.items():
        assert_no_secret(what, text)
    assert_no_secret("the logs", caplog.text)
    for record in caplog.records:
        assert_no_secret("a log record", json.dumps(record.__dict__, default=str))
    if kind != "refused":
        assert len(server.requests) == 2, "both turns reached the model"
        assert "user:***@127.0.0.1" in texts["the trace"], "the base URL is kept, redacted"


async def run_both_ways(tmp_path: Path, first: Provider, second: Provider) -> dict[str, str]:
    """The trace and reports of `run_turn`, and the bytes of a SQLite store `TurnJob` wrote."""
    hooks = LocalHooks(reporter=log_report)
    budget = Budget(call_timeout=5, min_call=1)
    result = await run_turn("hi", provider=first, hooks=hooks, budget=budget)
    store = await open_store(f"sqlite:///{tmp_path / 'turnkeeper.db'}")
    try:
        conversation_id = await store.create_conversation(hash_token("token"))
        turn = await store.create_turn(conversation_id, "hi")
        await TurnJob(store, second, budget=budget).run(turn.turn_id)
        state = await store.state_after(turn.turn_id, 0)
    finally:
        await store.close()
    for provider in (first, second):
        await provider.aclose()  # type: ignore[attr-defined]
    stored = store_bytes(tmp_path)
    return {
        "the trace": json.dumps(result.trace.to_json()),
        "the reports": json.dumps([r.as_dict() for r in hooks.reports], default=str),
        "the published state": json.dumps(state),
        "the stored turn": stored.decode("latin-1"),
    }


def store_bytes(folder: Path) -> bytes:
    """Every byte of the SQLite store, its WAL included."""
    return b"".join(p.read_bytes() for p in folder.glob("turnkeeper.db*"))


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
