"""The two protocols' mappings (api/ag_ui.py, api/ui_stream.py): pure functions from
turnkeeper's events to the protocol's, held to the protocol's own schema (AG-UI's
pydantic models; the AI SDK's part types) and to the order each protocol requires."""

from __future__ import annotations

from typing import Any

from ag_ui.core import Event
from pydantic import TypeAdapter

from turnkeeper.api.ag_ui import AgUiRun, interrupt_id, parse_interrupt, transcript_messages
from turnkeeper.api.ui_stream import UiStream
from turnkeeper.store.records import EventType, TurnEvent

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
CAPTIONS = {"activity.delete_file": "Deleted a file", "notices.truncated": "Cut short."}


def resolve(key: str) -> str:
    return CAPTIONS.get(key, key)


def log(*events: tuple[EventType, dict[str, Any]]) -> list[TurnEvent]:
    return [TurnEvent(n, kind, body) for n, (kind, body) in enumerate(events, 1)]


USAGE = {"input_tokens": 1, "output_tokens": 1}
TEXT = log(
    (EventType.TURN_STARTED, {}),
    (EventType.TEXT_DELTA, {"delta": "Hel", "message": "m2"}),
    (EventType.TEXT_DELTA, {"delta": "lo.", "message": "m2"}),
    (EventType.TURN_ENDED, {"status": "finished", "outcome": "finished", "usage": USAGE}),
)
TOOL = log(
    (EventType.TURN_STARTED, {}),
    (EventType.TEXT_DELTA, {"delta": "Looking.", "message": "m2"}),
    (EventType.TOOL_STARTED, {"tool_use_id": "tu1", "tool": "look_up", "input": {"q": "tea"}}),
    (EventType.TOOL_ENDED, {"tool_use_id": "tu1", "is_error": False, "output": "found tea"}),
    (EventType.ACTIVITY, {"key": "activity.delete_file"}),
    (EventType.TEXT_DELTA, {"delta": "Found.", "message": "m3"}),
    (EventType.TURN_ENDED, {"status": "finished", "outcome": "finished", "usage": USAGE}),
)
ASKED = {"tool_use_id": "tu9", "tool": "delete_file", "input": {"path": "a"}, "key": None}
WAITS = log(
    (EventType.TURN_STARTED, {}),
    (EventType.APPROVAL_REQUESTED, {"approvals": [ASKED]}),
    (EventType.TURN_WAITING, {}),
    (EventType.TURN_STARTED, {}),
    (EventType.TEXT_DELTA, {"delta": "Left it.", "message": "m2"}),
    (EventType.TURN_ENDED, {"status": "finished", "outcome": "finished", "usage": USAGE}),
)
CUT = log(
    (EventType.TURN_STARTED, {}),
    (EventType.TEXT_DELTA, {"delta": "A long", "message": "m2"}),
    (EventType.TEXT_RETRACTED, {"message": "m2", "key": "notices.truncated"}),
    (EventType.TURN_ENDED, {"status": "truncated", "outcome": "truncated", "usage": USAGE}),
)


def ag_ui(events: list[TurnEvent], after: int = 0, **given: Any) -> list[dict[str, Any]]:
    run = AgUiRun("thread", "run", "t_1", resolve, **given)
    out = list(run.started())
    for event in events:
        out += run.feed(event, shown=event.seq > after)
    dumped = [e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in out]
    for sent in dumped:
        EVENTS.validate_python(sent)  # each is a valid AG-UI 1.0 event
    return dumped


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_ag_ui_text_opens_streams_and_closes_one_message() -> None:
    out = ag_ui(TEXT)
    assert types(out) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert {e.get("messageId") for e in out[1:5]} == {"m2"}
    assert out[-1]["outcome"] == {"type": "success"}


def test_ag_ui_tool_call_closes_the_text_first_and_carries_input_and_result() -> None:
    out = ag_ui(TOOL)
    assert types(out)[3:8] == [
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ]
    assert out[5]["delta"] == '{"q": "tea"}'
    assert out[7]["content"] == "found tea"
    assert out[8]["activityType"] == "caption"
    assert out[8]["content"] == {"key": "activity.delete_file", "text": "Deleted a file"}


def test_ag_ui_wait_is_an_interrupt_and_the_resumed_run_does_not_announce_again() -> None:
    first = ag_ui(WAITS[:3])
    assert types(first) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    assert interrupt == {
        "id": "t_1:tu9",
        "reason": "tool_call",
        "toolCallId": "tu9",
        "message": "ui.approval_unknown".replace("{tool}", "delete_file"),
    }
    assert parse_interrupt(interrupt["id"]) == ("t_1", "tu9")
    assert parse_interrupt("no-colon") is None
    assert interrupt_id("t_1", "tu9") == "t_1:tu9"
    second = ag_ui(WAITS, after=3)
    assert types(second)[0] == "RUN_STARTED"
    assert "TOOL_CALL_START" not in types(second)
    assert types(second)[-1] == "RUN_FINISHED"


def test_ag_ui_cut_answer_withdraws_the_text_then_errors_with_the_outcome() -> None:
    history = transcript_messages([{"id": "m1", "role": "user", "text": "Write."}])
    out = ag_ui(CUT, history=history)
    assert types(out)[-3:] == ["TEXT_MESSAGE_END", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert out[-2]["messages"] == [{"id": "m1", "role": "user", "content": "Write."}]
    assert out[-1] == {"type": "RUN_ERROR", "message": "Cut short.", "code": "truncated"}


def test_ag_ui_stop_is_cancelled_and_refusal_an_error() -> None:
    stopped = log((EventType.TURN_ENDED, {"status": "stopped", "outcome": "stopped"}))
    assert ag_ui(stopped)[-1]["outcome"] == {"type": "cancelled"}
    refused = log((EventType.TURN_ENDED, {"status": "refused", "outcome": "refused"}))
    assert ag_ui(refused)[-1]["code"] == "refused"


def parts(
    events: list[TurnEvent], after: int = 0, decisions: dict[str, bool] | None = None
) -> list[dict[str, Any]]:
    stream = UiStream("t_1", resolve, decisions or {})
    out = stream.opening()
    for event in events:
        out += stream.feed(event, shown=event.seq > after)
    return out


def test_ui_stream_text_is_one_step_and_a_normal_finish() -> None:
    out = parts(TEXT)
    assert [p["type"] for p in out] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert out[0] == {"type": "start", "messageId": "t_1"}
    assert out[-1] == {"type": "finish", "finishReason": "stop"}


def test_ui_stream_each_model_call_is_a_step_its_tools_in_it() -> None:
    out = parts(TOOL)
    assert [p["type"] for p in out] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
        "data-activity",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert out[5]["dynamic"] is True
    assert out[5]["input"] == {"q": "tea"}
    assert out[9]["data"] == {"key": "activity.delete_file", "text": "Deleted a file"}


def test_ui_stream_approval_request_then_denied_on_the_resumed_run() -> None:
    first = UiStream("t_1", resolve)
    out = first.opening()
    for event in WAITS[:3]:
        out += first.feed(event)
    out += first.waited()
    assert [p["type"] for p in out] == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-approval-request",
        "finish-step",
        "finish",
    ]
    assert out[3] == {"type": "tool-approval-request", "approvalId": "tu9", "toolCallId": "tu9"}
    resumed = parts(WAITS, after=3, decisions={"tu9": False})
    assert [p["type"] for p in resumed][:2] == ["start", "tool-output-denied"]
    assert resumed[1] == {"type": "tool-output-denied", "toolCallId": "tu9"}
    approved = parts(WAITS, after=3, decisions={"tu9": True})
    assert "tool-output-denied" not in [p["type"] for p in approved]


def test_ui_stream_cut_answer_ends_with_the_notice_never_a_finish() -> None:
    out = parts(CUT)
    assert out[-1] == {"type": "error", "errorText": "Cut short."}
    assert "finish" not in [p["type"] for p in out]
    failed = log((EventType.TURN_ENDED, {"status": "failed", "outcome": "failed"}))
    assert parts(failed)[-1] == {"type": "error", "errorText": "errors.ai_failed"}


CRASHED = log(
    (EventType.TURN_STARTED, {}),
    (EventType.TOOL_STARTED, {"tool_use_id": "tu1", "tool": "look_up", "input": {}}),
    (EventType.TOOL_ENDED, {"tool_use_id": "tu1", "is_error": False, "output": "found"}),
    (EventType.TEXT_DELTA, {"delta": "w0 w1 ", "message": "m2"}),
    (EventType.TEXT_RETRACTED, {"message": "m2", "key": "errors.ai_failed"}),
    (EventType.TURN_STARTED, {}),
    (EventType.TEXT_DELTA, {"delta": "w0 w1 w2", "message": "m2"}),
    (EventType.TURN_ENDED, {"status": "finished", "outcome": "finished", "usage": USAGE}),
)


def test_ui_stream_restarts_the_message_after_a_live_withdrawal() -> None:
    """A crashed run's text, withdrawn while the response is open: once the turn goes on,
    a new message (a new `messageId`) repeats what stands, the dead text left out."""
    out = parts(CRASHED)
    restart = out.index({"type": "start", "messageId": "t_1-1"})
    texts = [p["delta"] for p in out[restart:] if p["type"] == "text-delta"]
    assert texts == ["w0 w1 w2"]
    tools = [p["type"] for p in out[restart:] if p["type"].startswith("tool-")]
    assert tools == ["tool-input-available", "tool-output-available"], "what stands, again"
    assert out[-1] == {"type": "finish", "finishReason": "stop"}


def test_ui_stream_sends_nothing_again_for_text_withdrawn_before_it() -> None:
    """Text withdrawn before the response began (hidden): no restart."""
    out = parts(CRASHED, after=5)
    assert all(p.get("messageId") != "t_1-1" for p in out)
    assert [p["delta"] for p in out if p["type"] == "text-delta"] == ["w0 w1 w2"]


def test_ui_stream_keeps_the_message_when_the_turn_ends_at_the_withdrawal() -> None:
    """A cut answer ends with the notice: no new message for nothing to follow."""
    assert [p for p in parts(CUT) if p["type"] == "start"] == [
        {"type": "start", "messageId": "t_1"}
    ]


WAITED_FOR_A_WORKER = log(
    (EventType.ACTIVITY, {"key": "notices.waiting_for_worker"}),
    (EventType.TURN_STARTED, {}),
    (EventType.TEXT_DELTA, {"delta": "Hello.", "message": "m2"}),
    (EventType.TURN_ENDED, {"status": "finished", "outcome": "finished", "usage": USAGE}),
)


def test_both_protocols_clear_the_waiting_notice_once_a_worker_took_the_turn() -> None:
    """The sweeper's "Waiting for the assistant to start…" is a caption; an answer with no
    tool caption after it would leave it shown, so the turn's start clears it in place."""
    captions = [
        e["content"] for e in ag_ui(WAITED_FOR_A_WORKER) if e["type"] == "ACTIVITY_SNAPSHOT"
    ]
    assert [c["key"] for c in captions] == ["notices.waiting_for_worker", None]
    assert captions[-1]["text"] == ""
    shown = [p["data"] for p in parts(WAITED_FOR_A_WORKER) if p["type"] == "data-activity"]
    assert shown == [
        {"key": "notices.waiting_for_worker", "text": "notices.waiting_for_worker"},
        {"key": None, "text": ""},
    ]
    assert [p["data"]["key"] for p in parts(TOOL) if p["type"] == "data-activity"] == [
        "activity.delete_file"
    ], "another caption is left to the next one"
