"""The turn's event log as the loop writes it (issue 28): the events of each kind of turn,
text deltas coalesced with the first one never held, and the published answer equal to
the joined deltas. Through `LocalHooks`; the store and the HTTP stream are
tests/api/test_stream.py's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests import scripts
from tests.streaming import StreamingScript
from turnkeeper.cards import Card
from turnkeeper.store.records import NewEvent, TurnEvent
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.approvals import Resume
from turnkeeper.turn.hooks import LocalHooks
from turnkeeper.turn.loop import TurnResult, run_turn
from turnkeeper.turn.setting import TurnSetting
from turnkeeper.wire import ToolSpec


class Counting(LocalHooks):
    """Local hooks that count the writes of events of their own, and when each came."""

    def __init__(self) -> None:
        super().__init__(reporter=lambda report: None)
        self.writes: list[tuple[float, Sequence[NewEvent]]] = []

    async def events(self, batch: Sequence[NewEvent]) -> None:
        self.writes.append((time.monotonic(), batch))
        await super().events(batch)


def types(log: list[TurnEvent]) -> list[str]:
    return [e.type.value for e in log]


def squeezed(log: list[TurnEvent]) -> list[str]:
    """The types with each run of deltas written as one."""
    out: list[str] = []
    for kind in types(log):
        if not (kind == "text.delta" and out and out[-1] == kind):
            out.append(kind)
    return out


def joined(log: list[TurnEvent], message: str) -> str:
    return "".join(
        e.body["delta"] for e in log if e.type == "text.delta" and e.body["message"] == message
    )


def assert_numbered(log: list[TurnEvent]) -> None:
    assert [e.seq for e in log] == list(range(1, len(log) + 1))


def assert_answers_are_the_deltas(result: TurnResult, log: list[TurnEvent]) -> None:
    """After `done`, each bot bubble's text is the joined deltas streamed into it (none
    retracted), and no delta went into a bubble the state does not show."""
    retracted = {e.body["message"] for e in log if e.type == "text.retracted"}
    shown = {m.id: m.text for m in result.state.messages if m.role == "bot"}
    streamed = {e.body["message"] for e in log if e.type == "text.delta"} - retracted
    for message in streamed:
        assert shown.get(message) == joined(log, message), message
    for message, text in shown.items():
        if text:
            assert message in streamed, f"{message} was shown but never streamed"


def card_tool() -> FunctionToolset:
    def lookup(args: dict[str, Any]) -> Card:
        return Card("Order 7", [("status", "shipped")])

    return FunctionToolset([Tool(ToolSpec("lookup", "Look an order up."), lookup)])


async def test_a_text_answer_streams_as_deltas_that_join_into_the_answer() -> None:
    hooks = Counting()
    provider = StreamingScript([scripts.answer("Hello there, dear reader.")], pieces=5)
    result = await run_turn("hi", provider=provider, hooks=hooks)
    log = hooks.log
    assert squeezed(log) == ["turn.started", "text.delta", "turn.ended"]
    assert_numbered(log)
    assert log[-1].body == {
        "status": "finished",
        "outcome": "finished",
        "usage": result.state.usage.as_dict(),
    }
    assert joined(log, result.state.messages[-1].id) == "Hello there, dear reader."
    assert_answers_are_the_deltas(result, log)


async def test_a_provider_that_does_not_stream_still_fills_the_log() -> None:
    hooks = LocalHooks()
    provider = scripts_provider([scripts.answer("All at once.")])
    result = await run_turn("hi", provider=provider, hooks=hooks)
    assert types(hooks.log) == ["turn.started", "text.delta", "turn.ended"]
    assert_answers_are_the_deltas(result, hooks.log)


def scripts_provider(responses: list[Any]) -> Any:
    from turnkeeper.providers.scripted import ScriptedProvider

    return ScriptedProvider(responses)


async def test_a_tool_and_its_card_are_events_in_order() -> None:
    hooks = LocalHooks()
    asked = scripts.asks(scripts.tool_use("lookup", {"order": 7}, id="toolu_1"), say="Looking.")
    provider = StreamingScript([asked, scripts.answer("It shipped.")], pieces=3)
    result = await run_turn(
        "where is order 7?",
        provider=provider,
        toolset=card_tool(),
        hooks=hooks,
        setting=TurnSetting(activities={"lookup": "activity.lookup"}),
    )
    log = hooks.log
    assert squeezed(log) == [
        "turn.started",
        "text.delta",
        "tool.started",
        "tool.ended",
        "activity",  # the past-tense caption once the tool ran, never before (issue 44)
        "card",
        "text.delta",
        "turn.ended",
    ]
    assert_numbered(log)
    by_type = {e.type.value: e.body for e in log}
    assert by_type["activity"] == {"key": "activity.lookup"}
    assert by_type["tool.started"] == {
        "tool_use_id": "toolu_1",
        "tool": "lookup",
        "input": {"order": 7},
    }
    assert by_type["tool.ended"]["tool_use_id"] == "toolu_1"
    assert by_type["tool.ended"]["is_error"] is False
    assert "Order 7" in by_type["tool.ended"]["output"]
    card = next(m for m in result.state.messages if m.card is not None)
    assert by_type["card"] == {"card": card.card.to_json(), "message": card.id}  # type: ignore[union-attr]
    assert_answers_are_the_deltas(result, log)


async def test_a_tool_result_is_cut_to_4000_characters_in_its_event() -> None:
    hooks = LocalHooks()
    toolset = FunctionToolset([Tool(ToolSpec("big", "Big."), lambda args: "x" * 10_000)])
    provider = StreamingScript([scripts.asks(scripts.tool_use("big")), scripts.answer("ok")])
    await run_turn("go", provider=provider, toolset=toolset, hooks=hooks)
    [ended] = [e for e in hooks.log if e.type == "tool.ended"]
    assert ended.body["output"] == "x" * 4000


async def test_a_turn_that_waits_for_approval_ends_its_run_with_turn_waiting() -> None:
    hooks = LocalHooks()
    toolset = FunctionToolset(
        [Tool(ToolSpec("delete_file", "Delete."), lambda a: "deleted", needs_approval=True)]
    )
    asked = scripts.asks(scripts.tool_use("delete_file", {"path": "a"}, id="toolu_del"))
    result = await run_turn(
        "delete a",
        provider=StreamingScript([asked]),
        toolset=toolset,
        hooks=hooks,
        setting=TurnSetting(resume=Resume(frozenset({"delete_file"}))),
    )
    assert result.outcome is None
    assert types(hooks.log) == ["turn.started", "approval.requested", "turn.waiting"]
    assert hooks.log[1].body == {"approvals": [a.to_json() for a in result.state.approvals]}


async def test_max_tokens_retracts_the_streamed_text() -> None:
    hooks = LocalHooks(reporter=lambda report: None)
    cut = scripts.body([scripts.text("The answer is cut sho")], "max_tokens")
    result = await run_turn("long?", provider=StreamingScript([cut]), hooks=hooks)
    log = hooks.log
    assert squeezed(log) == ["turn.started", "text.delta", "text.retracted", "turn.ended"]
    retracted = log[-2].body
    notice = result.state.messages[-1]
    assert retracted == {"message": log[1].body["message"], "key": notice.key}
    assert notice.key == "errors.ai_truncated"
    assert log[-1].body["outcome"] == "truncated"
    assert all(m.text != "The answer is cut sho" for m in result.state.messages)
    assert_answers_are_the_deltas(result, log)


async def test_a_dropped_stream_retracts_its_text_and_the_turn_fails() -> None:
    hooks = LocalHooks(reporter=lambda report: None)
    provider = StreamingScript([scripts.answer("Half an ans")], drop=0)
    result = await run_turn("hi", provider=provider, hooks=hooks)
    log = hooks.log
    assert result.state.status == "failed"
    assert squeezed(log) == ["turn.started", "text.delta", "text.retracted", "turn.ended"]
    assert log[-2].body["key"] == result.state.messages[-1].key
    assert log[-1].body["outcome"] == "failed"
    assert_answers_are_the_deltas(result, log)


async def test_a_stop_during_the_stream_retracts_its_text() -> None:
    hooks = LocalHooks(reporter=lambda report: None)
    pieces: list[str] = []

    def streamed(piece: str) -> None:
        pieces.append(piece)
        if len(pieces) == 3:
            hooks.stop()

    provider = StreamingScript(
        [scripts.answer("one two three four five six")], pieces=6, gap=0.05, streamed=streamed
    )
    result = await run_turn("count", provider=provider, hooks=hooks)
    log = hooks.log
    assert result.state.status == "stopped"
    assert squeezed(log) == ["turn.started", "text.delta", "text.retracted", "turn.ended"]
    assert log[-2].body["key"] == "notices.stopped"
    assert_answers_are_the_deltas(result, log)


async def test_a_fast_stream_of_1000_pieces_makes_few_writes() -> None:
    hooks = Counting()
    text = "".join(f"w{i} " for i in range(1000))
    provider = StreamingScript([scripts.answer(text)], pieces=1000)
    result = await run_turn("talk", provider=provider, hooks=hooks)
    assert 1 <= len(hooks.writes) <= 25, f"{len(hooks.writes)} writes for 1,000 pieces"
    assert joined(hooks.log, result.state.messages[-1].id) == text
    assert_answers_are_the_deltas(result, hooks.log)


async def test_deltas_are_coalesced_to_one_write_per_50_ms_and_the_first_is_not_held() -> None:
    hooks = Counting()
    text = "".join(f"w{i} " for i in range(300))
    first: list[float] = []
    provider = StreamingScript(
        [scripts.answer(text)], pieces=300, gap=0.002,
        streamed=lambda piece: first.append(time.monotonic()) if not first else None,
    )  # fmt: skip
    started = time.monotonic()
    result = await run_turn("talk", provider=provider, hooks=hooks)
    took = time.monotonic() - started
    assert len(hooks.writes) >= 2
    assert len(hooks.writes) <= took / 0.05 + 2, f"{len(hooks.writes)} writes in {took:.2f} s"
    gaps = [b[0] - a[0] for a, b in zip(hooks.writes, hooks.writes[1:], strict=False)]
    assert min(gaps) >= 0.045, gaps
    assert hooks.writes[0][0] - first[0] < 0.05, "the first delta is written at once"
    assert joined(hooks.log, result.state.messages[-1].id) == text


async def test_the_first_delta_is_written_before_the_next_piece_comes() -> None:
    hooks = Counting()
    seen: list[int] = []
    provider = StreamingScript(
        [scripts.answer("first second")], pieces=2, gap=0.3,
        streamed=lambda piece: seen.append(len(hooks.writes)),
    )  # fmt: skip
    await run_turn("go", provider=provider, hooks=hooks)
    assert seen == [0, 1], "the first piece was written while the second was awaited"
    assert hooks.writes[0][1][-1][1]["delta"] == "first "


async def test_whitespace_alone_is_never_streamed() -> None:
    hooks = LocalHooks()
    asked = scripts.asks(scripts.tool_use("lookup", id="toolu_1"), say="\n ")
    provider = StreamingScript([asked, scripts.answer("Done.")], pieces=2)
    result = await run_turn("go", provider=provider, toolset=card_tool(), hooks=hooks)
    deltas = [e.body["delta"] for e in hooks.log if e.type == "text.delta"]
    assert deltas == ["Done."] or "".join(deltas) == "Done."
    assert_answers_are_the_deltas(result, hooks.log)


def test_the_helpers_cut_text_into_pieces() -> None:
    assert "".join(pieces_of_text()) == "abcdefg"


def pieces_of_text() -> list[str]:
    from tests.streaming import pieces_of

    return pieces_of("abcdefg", 3)


async def test_a_slow_write_of_deltas_keeps_the_order() -> None:
    class Slow(Counting):
        async def events(self, batch: Sequence[NewEvent]) -> None:
            await asyncio.sleep(0.08)
            await super().events(batch)

    hooks = Slow()
    provider = StreamingScript([scripts.answer("a b c d e f g h")], pieces=8, gap=0.01)
    result = await run_turn("go", provider=provider, hooks=hooks)
    assert_numbered(hooks.log)
    assert types(hooks.log)[-1] == "turn.ended"
    assert joined(hooks.log, result.state.messages[-1].id) == "a b c d e f g h"


async def test_metrics_carry_time_to_first_delta_and_deltas_per_turn() -> None:
    from tests.test_metrics import samples
    from turnkeeper.observe.metrics import Metrics

    metrics = Metrics()
    provider = StreamingScript([scripts.answer("one two three")], pieces=3, gap=0.1)
    await run_turn("q", provider=provider, hooks=LocalHooks(), watcher=metrics)
    got = samples(metrics)
    assert got[("turnkeeper_time_to_first_delta_seconds_count", ())] == 1
    assert got[("turnkeeper_time_to_first_delta_seconds_sum", ())] < 0.1, (
        "the first piece came at once"
    )
    assert got[("turnkeeper_deltas_per_turn_count", ())] == 1
    assert got[("turnkeeper_deltas_per_turn_sum", ())] == 3


async def test_spans_carry_time_to_first_delta_and_deltas() -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.test_telemetry import telemetry

    exporter = InMemorySpanExporter()
    provider = StreamingScript([scripts.answer("one two three")], pieces=3, gap=0.1)
    await run_turn("q", provider=provider, hooks=LocalHooks(), watcher=telemetry(exporter))
    spans = {s.name.split(" ")[0]: s for s in exporter.get_finished_spans()}
    call = spans["chat"].attributes or {}
    assert call["turnkeeper.deltas"] == 3
    assert 0 <= float(call["turnkeeper.time_to_first_delta"]) < 0.1  # type: ignore[arg-type]
    assert (spans["invoke_agent"].attributes or {})["turnkeeper.deltas"] == 3


async def test_trace_show_marks_streamed_calls() -> None:
    provider = StreamingScript([scripts.answer("streamed")])
    result = await run_turn("q", provider=provider, hooks=LocalHooks())
    assert result.trace.calls[0].summary()["streamed"] is True
    from turnkeeper.providers.scripted import ScriptedProvider

    before_the_seam: Any = Whole(ScriptedProvider([scripts.answer("x")]))
    plain = await run_turn("q", provider=before_the_seam)
    assert "streamed" not in plain.trace.calls[0].summary()


class Whole:
    """A provider of one's own written before the `on_text` seam: its answers arrive whole
    (`providers.takes_text` is False), so no call of it is marked streamed."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.wire = inner, inner.wire

    async def complete(self, history: Any, tools: Any, timeout: float) -> Any:
        return await self.inner.complete(history, tools, timeout)

    def user_message(self, text: str) -> Any:
        return self.inner.user_message(text)

    def tool_results(self, results: Any) -> Any:
        return self.inner.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return dict(self.inner.describe())


async def test_trace_show_prints_which_calls_streamed(tmp_path: Path) -> None:
    from turnkeeper.cli import timeline
    from turnkeeper.turn.trace import read_trace, write_trace

    provider = StreamingScript([scripts.answer("streamed")])
    result = await run_turn("q", provider=provider, hooks=LocalHooks())
    write_trace(result.trace, tmp_path / "t.json")
    calls = read_trace(tmp_path / "t.json").calls
    assert calls[0].streamed is True, "the trace file keeps it"
    shown = timeline.render(timeline.rows(calls), "finished")
    assert "end_turn,streamed" in shown
    stored = timeline.render(timeline.stored_rows([calls[0].summary()]), "finished")
    assert "end_turn,streamed" in stored
