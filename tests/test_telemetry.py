"""OpenTelemetry spans of a turn, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.models import GatedModel
from tests.scripts import answer, asks, body, tool_use, usage
from turnkeeper import LocalHooks, Outcome, ScriptedProvider, TurnSetting, run_turn
from turnkeeper.credentials import keep_secret
from turnkeeper.observe.telemetry import Telemetry
from turnkeeper.observe.watched import CallEnd, TurnInfo
from turnkeeper.outcomes import ending
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.usage import Usage
from turnkeeper.wire import ToolSpec

QUESTION = "what is my secret plan?"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def telemetry(exporter: InMemorySpanExporter, *, content: bool = False) -> Telemetry:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(provider, content=content)


def lookup() -> FunctionToolset:
    return FunctionToolset(
        [Tool(ToolSpec("lookup", "Look it up."), lambda args: "the plan is in the drawer")]
    )


async def traced(
    responses: list[dict[str, Any]], exporter: InMemorySpanExporter, *, content: bool = False
) -> dict[str, ReadableSpan]:
    await run_turn(
        QUESTION,
        provider=ScriptedProvider(responses),
        toolset=lookup(),
        hooks=LocalHooks(reporter=lambda r: None),
        watcher=telemetry(exporter, content=content),
        setting=TurnSetting(turn_id="t_otel", conversation_id="c_otel"),
    )
    return {span.name: span for span in exporter.get_finished_spans()}


async def test_a_turn_is_one_trace_of_a_turn_span_model_calls_and_tool_calls(
    exporter: InMemorySpanExporter,
) -> None:
    first = asks(tool_use("lookup", {"where": "desk"}))
    first["usage"] = usage(120, 30)
    last = answer("in the drawer", usage=usage(200, 12), model="claude-sonnet-4-5-20250929")
    spans = await traced([first, last], exporter)
    every = exporter.get_finished_spans()
    assert sorted(s.name for s in every) == [
        "chat unknown",  # the scripted model names no model until it answers
        "chat unknown",
        "execute_tool lookup",
        "invoke_agent",
    ]
    turn = spans["invoke_agent"]
    assert turn.status.status_code is StatusCode.OK
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.conversation.id"] == "c_otel"
    assert turn.attributes["gen_ai.usage.input_tokens"] == 320
    assert {s.context.trace_id for s in every} == {turn.context.trace_id}
    children = [s for s in every if s is not turn]
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in children)
    calls = [s for s in every if s.name.startswith("chat ")]
    attributes = [dict(s.attributes or {}) for s in calls]
    assert attributes[0]["gen_ai.operation.name"] == "chat"
    assert attributes[0]["gen_ai.provider.name"] == "scripted"
    assert attributes[0]["gen_ai.usage.input_tokens"] == 120
    assert attributes[0]["gen_ai.usage.output_tokens"] == 30
    assert attributes[0]["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert attributes[1]["gen_ai.response.model"] == "claude-sonnet-4-5-20250929"
    assert attributes[1]["gen_ai.response.finish_reasons"] == ("end_turn",)
    tool = dict(spans["execute_tool lookup"].attributes or {})
    assert tool["gen_ai.operation.name"] == "execute_tool"
    assert tool["gen_ai.tool.name"] == "lookup"


async def test_a_requested_model_names_the_call_span() -> None:
    from turnkeeper.observe.watched import TurnInfo

    exporter = InMemorySpanExporter()
    watch = telemetry(exporter).turn(TurnInfo("t", "c", "anthropic", "claude-haiku-4-5"))
    watch.call_started(1)
    watch.turn_ended(ending(Outcome.FAILED), Usage())
    names = {s.name: s for s in exporter.get_finished_spans()}
    assert set(names) == {"chat claude-haiku-4-5", "invoke_agent"}
    assert names["chat claude-haiku-4-5"].attributes is not None
    assert names["chat claude-haiku-4-5"].attributes["gen_ai.request.model"] == "claude-haiku-4-5"
    assert names["invoke_agent"].status.status_code is StatusCode.ERROR


@pytest.mark.parametrize(
    ("last", "status"),
    [
        (body([], "max_tokens"), StatusCode.ERROR),
        (body([], "refusal"), StatusCode.OK),
    ],
)
async def test_the_turn_spans_status_follows_the_outcome(
    exporter: InMemorySpanExporter, last: dict[str, Any], status: StatusCode
) -> None:
    spans = await traced([last], exporter)
    assert spans["invoke_agent"].status.status_code is status
    assert spans["invoke_agent"].attributes is not None
    assert spans["invoke_agent"].attributes["turnkeeper.outcome"] in ("truncated", "refused")


def _all_text(spans: dict[str, ReadableSpan]) -> str:
    return " ".join(
        f"{s.name} {dict(s.attributes or {})} {s.status.description} "
        + " ".join(str(e.attributes) for e in s.events)
        for s in spans.values()
    )


async def test_spans_carry_no_content_unless_the_user_opts_in(
    exporter: InMemorySpanExporter,
) -> None:
    script = [asks(tool_use("lookup", {"where": "desk"})), answer("in the drawer")]
    quiet = _all_text(await traced(script, exporter))
    for content in (QUESTION, "desk", "in the drawer"):
        assert content not in quiet
    exporter.clear()
    script = [asks(tool_use("lookup", {"where": "desk"})), answer("in the drawer")]
    told = _all_text(await traced(script, exporter, content=True))
    for content in (QUESTION, "desk", "in the drawer"):
        assert content in told


async def test_without_a_configured_tracer_provider_turns_are_not_traced() -> None:
    from turnkeeper.observe.telemetry import configured

    assert configured() is None


async def test_without_the_otel_extra_turns_run_unwatched_and_look_for_it_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed import is not cached by Python: looking for the extra on every turn
    would cost more than the turn's loop."""
    import importlib.abc
    import sys

    from turnkeeper.observe import watchers as instruments

    looked: list[str] = []

    class Counting(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name == "turnkeeper.observe.telemetry":
                looked.append(name)

    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry fails
    monkeypatch.delitem(sys.modules, "turnkeeper.observe.telemetry")
    monkeypatch.setattr(instruments, "_telemetry_missing", False)
    monkeypatch.setattr(sys, "meta_path", [Counting(), *sys.meta_path])
    for _ in range(3):
        result = await run_turn("hi", provider=ScriptedProvider([answer("hello")]))
        assert result.outcome is Outcome.FINISHED
    assert instruments.default_watchers().watchers == []
    assert looked == ["turnkeeper.observe.telemetry"]


GLOBAL_PROVIDER = """
import asyncio, json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from turnkeeper import ScriptedProvider, run_turn
from tests.scripts import answer

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
asyncio.run(run_turn("q", provider=ScriptedProvider([answer("hi")])))
print(json.dumps(sorted(s.name for s in exporter.get_finished_spans())))
"""


def test_an_application_that_sets_a_tracer_provider_gets_spans_without_asking() -> None:
    """The global provider can be set once per process: this runs in one of its own."""
    done = subprocess.run(
        [sys.executable, "-c", GLOBAL_PROVIDER],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["chat unknown", "invoke_agent"]  # no model requested


async def test_spans_count_the_prompt_caches_tokens_as_the_conventions_say(
    exporter: InMemorySpanExporter,
) -> None:
    """`gen_ai.usage.input_tokens` includes the cache's reads and writes, and
    `gen_ai.usage.cache_read.input_tokens` / `cache_creation.input_tokens` count them apart,
    on each call's span and the turn's."""
    first = asks(tool_use("lookup"))
    first["usage"] = usage(10, 30, cache_creation_input_tokens=6_000)
    last = answer(
        "done", usage=usage(12, 5, cache_creation_input_tokens=400, cache_read_input_tokens=6_010)
    )
    spans = await traced([first, last], exporter)
    calls = [
        dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name.startswith("chat")
    ]
    assert [c["gen_ai.usage.cache_creation.input_tokens"] for c in calls] == [6_000, 400]
    assert [c["gen_ai.usage.cache_read.input_tokens"] for c in calls] == [0, 6_010]
    assert [c["gen_ai.usage.input_tokens"] for c in calls] == [6_010, 6_422]
    turn = dict(spans["invoke_agent"].attributes or {})
    assert turn["gen_ai.usage.input_tokens"] == 6_010 + 6_422
    assert turn["gen_ai.usage.cache_read.input_tokens"] == 6_010
    assert turn["gen_ai.usage.cache_creation.input_tokens"] == 6_400
    assert turn["gen_ai.usage.output_tokens"] == 35


def test_a_call_spans_error_hides_the_configured_secrets(exporter: InMemorySpanExporter) -> None:
    """Whatever made the error text, a kept secret in it never reaches a span."""
    secret = "sk-span-SECRET-0123456789"
    keep_secret(secret)
    spans = telemetry(exporter).turn(TurnInfo("t_1", "c_1", "anthropic", "claude-x"))
    spans.call_started(1)
    spans.call_ended(CallEnd(1, 0.5, "claude-x", error=f"ProviderFailed: bad key {secret}"))
    spans.turn_ended(ending(Outcome.FAILED), Usage())
    (call,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert call.status.status_code is StatusCode.ERROR
    assert call.status.description == "ProviderFailed: bad key ***"
    assert call.attributes is not None
    assert call.attributes["error.type"] == "ProviderFailed"


async def test_a_call_cut_off_by_a_cancel_still_ends_its_span(
    exporter: InMemorySpanExporter,
) -> None:
    """The process stopping cancels the turn's task mid-call: the call's span ends, as an
    error, instead of never being exported."""
    model = GatedModel([answer("never sent")])
    turn = asyncio.create_task(
        run_turn(
            QUESTION,
            provider=model,
            hooks=LocalHooks(reporter=lambda r: None),
            watcher=telemetry(exporter),
        )
    )
    await model.started.wait()
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    calls = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(calls) == 1
    assert calls[0].status.status_code is StatusCode.ERROR
    assert calls[0].attributes is not None
    assert calls[0].attributes["error.type"] == "CancelledError"
