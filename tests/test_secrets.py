"""A provider key set in the environment never reaches logs, spans, traces, metrics or the store."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.providers.wire_server import WireServer, json_response
from tests.scripts import answer, asks, tool_use
from turnkeeper import LocalHooks, run_turn
from turnkeeper.observe.logs import JsonFormatter
from turnkeeper.observe.metrics import Metrics
from turnkeeper.observe.telemetry import Telemetry
from turnkeeper.observe.watchers import Watchers
from turnkeeper.providers.select import choose_provider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import new_token, open_store
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import ToolSpec

KEY = "sk-ant-secret-0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c"


def refused_key() -> dict[str, Any]:
    error = {"type": "invalid_request_error", "message": "max_tokens: too large for this model"}
    return {"type": "error", "error": error}


async def test_the_key_is_nowhere_but_in_the_requests_to_the_provider(
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    server.add(
        json_response(asks(tool_use("lookup", {"q": "x"}))),
        json_response(answer("found it", model="claude-sonnet-4-5")),
        json_response(refused_key(), status=400),
        json_response(refused_key(), status=400),
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    environ = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url}
    provider = choose_provider("anthropic", "claude-sonnet-4-5", environ)
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    metrics = Metrics()
    watcher = Watchers([metrics, Telemetry(tracing, content=True)])
    tools = FunctionToolset([Tool(ToolSpec("lookup", "Look up."), lambda args: "found")])
    database = tmp_path / "tk.db"
    store = await open_store(f"sqlite:///{database}")
    with caplog.at_level(logging.DEBUG):
        conversation_id = await store.create_conversation(new_token()[1])
        for question in ("one", "two"):
            turn = await store.create_turn(conversation_id, question)
            await TurnJob(store, provider, tools, watcher=watcher).run(turn.turn_id)
        traced = await run_turn("three", provider=provider, hooks=LocalHooks(), watcher=watcher)
    stored = [
        (await store.transcript(conversation_id)).messages,
        await store.history(conversation_id),
        [u.as_dict() for u in await store.usages(conversation_id)],
    ]
    await store.close()
    await provider.aclose()  # type: ignore[attr-defined]

    assert any(KEY in v for r in server.requests for v in r.headers.values()), "it was used"
    assert {r.levelname for r in caplog.records} >= {"ERROR"}, "the failed turns were reported"
    logged = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    assert KEY not in logged
    assert KEY not in json.dumps(traced.trace.to_json())
    exported = [
        (s.name, dict(s.attributes or {}), s.status.description, [e.attributes for e in s.events])
        for s in spans.get_finished_spans()
    ]
    assert len(exported) >= 6
    assert KEY not in json.dumps(exported, default=str)
    assert KEY not in metrics.exposition().decode()
    assert KEY not in json.dumps(stored, default=str)
    files = [database, *database.parent.glob("tk.db-*")]
    assert all(KEY.encode() not in f.read_bytes() for f in files)
