"""API keys and URL credentials never appear in traces, logs, reports, stored turns or errors.

Each provider is pointed at the wire server through a base URL that carries a
user and password (`http://user:secret@host`), with an API key of its own; the
turn then runs through `TurnJob` on a SQLite store, and once more through
`run_turn` for its trace, both watched by OpenTelemetry. Bodies are CONSTRUCTED
from the API references: a plain answer, a 502 whose text body echoes the URL
the way a proxy's error page does, and a 401 whose error message echoes the
request's `x-api-key` and `Authorization` values as they were sent.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.providers.wire_server import Canned, WireServer, json_response, serving
from tests.scripts import answer, asks, tool_use
from turnkeeper import Budget, LocalHooks, run_turn, tool
from turnkeeper.credentials import keep_secret
from turnkeeper.observe.logs import TEXT, JsonFormatter
from turnkeeper.observe.report import log_report
from turnkeeper.observe.telemetry import Telemetry
from turnkeeper.providers import Provider
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.openai import OpenAIProvider
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import hash_token, open_store
from turnkeeper.tools.functions import FunctionToolset

API_KEY = "sk-test-APIKEYSECRET-0123456789"
PASSWORD = "URLPASSWORD-s3cret"
BASIC = base64.b64encode(f"user:{PASSWORD}".encode()).decode()
"""The base URL's user-info as HTTP Basic sends it in `Authorization`."""
SECRETS = (API_KEY, PASSWORD, BASIC)

ECHOED = {
    "type": "error",
    "error": {
        "type": "authentication_error",
        "message": "invalid key {x-api-key}; you sent {authorization}",
    },
}
"""An error body both wire formats read (`error.message`), quoting the request's headers."""

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
    if kind.startswith("echo"):
        return json_response(ECHOED, 401, echo=True)
    echo = f"Bad gateway: upstream {url}/v1/messages did not answer".encode()
    return Canned(502, echo, {"content-type": "text/plain"})


def assert_no_secret(what: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{what} holds a secret: {text[:2000]}"


@pytest.mark.parametrize("kind", ["answer", "proxy-error", "refused", "echo", "echo-key"])
@pytest.mark.parametrize("name", list(PROVIDERS))
async def test_no_secret_is_written_anywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, kind: str
) -> None:
    make, answer = PROVIDERS[name]
    server = WireServer()
    server.start()
    try:
        port = server.port if kind != "refused" else closed_port()
        # With user-info in the base URL the SDKs send it as `Authorization: Basic`, not the key.
        userinfo = "" if kind == "echo-key" else f"user:{PASSWORD}@"
        url = f"http://{userinfo}127.0.0.1:{port}"
        server.add(fault(kind, answer, url), fault(kind, answer, url))
        caplog.set_level(logging.DEBUG)
        texts = await run_both_ways(tmp_path, make(url), make(url))
    finally:
        server.close()
    texts["the text log"] = "\n".join(logging.Formatter(TEXT).format(r) for r in caplog.records)
    texts["the JSON log"] = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    for what, text in texts.items():
        assert_no_secret(what, text)
    assert_no_secret("the logs", caplog.text)
    for record in caplog.records:
        assert_no_secret("a log record", json.dumps(record.__dict__, default=str))
    if kind != "refused":
        assert len(server.requests) == 2, "both turns reached the model"
    if userinfo and kind != "refused":
        assert "user:***@127.0.0.1" in texts["the trace"], "the base URL is kept, redacted"
    if kind.startswith("echo"):
        sent = " ".join(v for r in server.requests for v in r.headers.values())
        assert (API_KEY if kind == "echo-key" else BASIC) in sent, "the server could echo it"
        assert "invalid key" in texts["the trace"], "the error is kept, redacted"
        assert "invalid key" in texts["the spans"]


async def run_both_ways(tmp_path: Path, first: Provider, second: Provider) -> dict[str, str]:
    """The trace and reports of `run_turn`, and the bytes of a SQLite store `TurnJob` wrote."""
    hooks = LocalHooks(reporter=log_report)
    budget = Budget(call_timeout=5, min_call=1)
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    watcher = Telemetry(tracing, content=True)
    result = await run_turn("hi", provider=first, hooks=hooks, budget=budget, watcher=watcher)
    store = await open_store(f"sqlite:///{tmp_path / 'turnkeeper.db'}")
    try:
        conversation_id = await store.create_conversation(hash_token("token"))
        turn = await store.create_turn(conversation_id, "hi")
        await TurnJob(store, second, budget=budget, watcher=watcher).run(turn.turn_id)
        state = await store.state_after(turn.turn_id, 0)
        transcript = (await store.transcript(conversation_id)).messages
    finally:
        await store.close()
    for provider in (first, second):
        await provider.aclose()  # type: ignore[attr-defined]
    stored = store_bytes(tmp_path)
    return {
        "the trace": json.dumps(result.trace.to_json()),
        "the reports": json.dumps([r.as_dict() for r in hooks.reports], default=str),
        "the published state": json.dumps(state),
        "the transcript": json.dumps(transcript),
        "the stored turn": stored.decode("latin-1"),
        "the spans": exported(spans),
    }


def exported(spans: InMemorySpanExporter) -> str:
    """Every finished span's name, attributes, status and events, as text."""
    return json.dumps(
        [
            (
                s.name,
                dict(s.attributes or {}),
                s.status.description,
                [e.attributes for e in s.events],
            )
            for s in spans.get_finished_spans()
        ],
        default=str,
    )


def store_bytes(folder: Path) -> bytes:
    """Every byte of the SQLite store, its WAL included."""
    return b"".join(p.read_bytes() for p in folder.glob("turnkeeper.db*"))


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_echoed_key_is_in_no_row_of_either_store(store_url: str, tmp_path: Path) -> None:
    """The failed turn's published state, transcript, records and every row of every table."""
    with serving(json_response(ECHOED, 401, echo=True)) as server:
        provider = anthropic(server.url)
        store = await open_store(store_url)
        try:
            conversation_id = await store.create_conversation(hash_token("token"))
            turn = await store.create_turn(conversation_id, "hi")
            await TurnJob(store, provider, budget=Budget(call_timeout=5)).run(turn.turn_id)
            state = await store.state_after(turn.turn_id, 0)
            read = [state, (await store.transcript(conversation_id)).messages]
            read.append(await store.iterations(turn.turn_id))
        finally:
            await store.close()
            await provider.aclose()  # type: ignore[attr-defined]
        sent = " ".join(v for r in server.requests for v in r.headers.values())
    assert API_KEY in sent, "the server could echo it"
    assert state is not None
    assert state["status"] == "failed"
    assert "you sent Bearer ***" in json.dumps(read, default=str), "the error is kept, redacted"
    assert_no_secret("what the store reads back", json.dumps(read, default=str))
    assert_no_secret("the store's rows", every_row(store_url, tmp_path))


def every_row(store_url: str, folder: Path) -> str:
    """Every byte of a SQLite store, or every row of every table of a PostgreSQL schema."""
    if store_url.startswith("sqlite"):
        return b"".join(p.read_bytes() for p in folder.glob("turnkeeper.db*")).decode("latin-1")
    with psycopg.connect(store_url, autocommit=True) as db:
        tables = db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        rows = [db.execute(f'SELECT t::text FROM "{name}" t').fetchall() for (name,) in tables]
    assert len(tables) >= 3, "the schema holds the store's tables"
    return json.dumps(rows, default=str)


async def test_a_tool_error_that_echoes_a_secret_reaches_neither_the_model_nor_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tool's exception text becomes a tool result (stored, sent to the model) and a
    report: a secret the process keeps is hidden in both."""

    secret = "sk-tool-echo-0123456789"
    keep_secret(secret)

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        raise RuntimeError(f"backend refused key {secret} for {order}")

    provider = ScriptedProvider([asks(tool_use("lookup", {"order": "A1"})), answer("sorry")])
    with caplog.at_level(logging.INFO):
        result = await run_turn(
            "where is A1?", provider=provider, toolset=FunctionToolset([lookup])
        )
    history = json.dumps(result.history)
    assert "backend refused key" in history  # the error did reach the model
    assert secret not in history
    assert secret not in json.dumps(result.state.to_json())
    assert secret not in caplog.text
