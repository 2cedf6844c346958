"""Waiting and resuming as data and in the library (approvals.py): a turn that stops to
wait, a resumed one, their traces, and replays that reproduce both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import scripts
from turnkeeper.providers import messages_api
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.state import Approval, queued
from turnkeeper.store.records import ResumeRecord, decision_made
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.approvals import Resume, resume_from
from turnkeeper.turn.hooks import LocalHooks
from turnkeeper.turn.loop import run_turn
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.turn.setting import TurnSetting
from turnkeeper.turn.trace import read_trace, write_trace
from turnkeeper.usage import Usage
from turnkeeper.wire import ToolSpec

GATE = frozenset({"delete_file"})
ASKS = scripts.asks(
    scripts.tool_use("lookup", {}, id="toolu_look"),
    scripts.tool_use("delete_file", {"path": "a.txt"}, id="toolu_del"),
)


def toolset(ran: list[str]) -> FunctionToolset:
    def lookup(args: dict[str, Any]) -> str:
        ran.append("lookup")
        return "found"

    def delete_file(args: dict[str, Any]) -> str:
        ran.append("delete_file")
        return "deleted"

    return FunctionToolset(
        [
            Tool(ToolSpec("lookup", "Look."), lookup),
            Tool(ToolSpec("delete_file", "Delete."), delete_file, needs_approval=True),
        ]
    )


async def test_a_turn_with_a_tool_that_needs_approval_stops_and_replays_the_same(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    hooks = LocalHooks()
    result = await run_turn(
        "delete a.txt",
        provider=ScriptedProvider([ASKS]),
        toolset=toolset(ran),
        hooks=hooks,
        setting=TurnSetting(resume=Resume(GATE)),
    )
    assert result.outcome is None
    assert (result.state.status, result.state.done) == ("waiting", False)
    assert [a.tool_use_id for a in result.state.approvals] == ["toolu_del"]
    assert ran == ["lookup"]
    assert hooks.waiting_record is not None
    assert [r.tool_use_id for r in hooks.waiting_record.results] == ["toolu_look"]
    assert hooks.finishes == 0, "a waiting turn is not finalised"
    trace = result.trace
    assert trace.outcome == "waiting"
    assert trace.calls[0].decision == "waiting"
    written = trace.to_json()
    assert written["outcome"] == "waiting"
    assert written["resume"]["needs_approval"] == ["delete_file"]
    write_trace(trace, tmp_path / "waiting.json")
    assert read_trace(tmp_path / "waiting.json").to_json() == written, "the file keeps it all"
    assert first_difference(trace, (await replay(trace)).trace) is None


async def test_a_resumed_turn_answers_its_last_response_then_goes_on_and_replays() -> None:
    ran: list[str] = []
    history = [
        messages_api.user_message("delete a.txt"),
        {"role": "assistant", "content": ASKS["content"]},
    ]
    record = ResumeRecord.from_json(
        {
            "asked": True,
            "results": [{"tool_use_id": "toolu_look", "content": "found", "is_error": False}],
            "approvals": [{"tool_use_id": "toolu_del", "tool": "delete_file", "approved": True}],
            "working": 2.5,
        }
    )
    usage = messages_api.parse_reply(ASKS).usage
    usage.iterations = 1
    resume = resume_from(record, history, messages_api.WIRE, usage, needs_approval=GATE)
    assert [u.id for u in resume.to_run()] == ["toolu_del"]
    assert resume.why == "after approval: delete_file approved"
    model = ScriptedProvider([scripts.answer("Gone.")])
    result = await run_turn(
        "delete a.txt",
        provider=model,
        toolset=toolset(ran),
        history=history,
        setting=TurnSetting(resume=resume),
    )
    assert result.state.status == "finished"
    assert ran == ["delete_file"], "only the approved use runs; the other kept its result"
    assert result.usage.iterations == 2, "the iterations before the wait still count"
    asked = model.requests[0]
    assert asked[:2] == history, "the question is not asked again"
    assert [b["content"] for b in asked[-1]["content"]] == ["found", "deleted"]
    trace = result.trace
    assert trace.calls[0].iteration == 2
    assert trace.to_json()["calls"][0]["resumed"] == "after approval: delete_file approved"
    replayed = (await replay(trace)).trace
    assert first_difference(trace, replayed) is None
    assert replayed.history == trace.history
    assert replayed.to_json()["calls"][0]["resumed"] == "after approval: delete_file approved"


def test_a_decision_is_taken_once_and_the_turn_is_queued_when_all_are_in() -> None:
    a, b = (Approval(tool_use_id, "t", {}, None) for tool_use_id in "ab")
    record = ResumeRecord(True, approvals=(a, b))
    state = queued("t_1", "c_1", "q").waiting(None, Usage(), (), (a, b))
    assert decision_made(record, state, "c", True) is None
    first = decision_made(record, state, "a", False)
    assert first is not None
    record, state = first
    assert (state.version, state.status) == (3, "waiting")
    assert [x.tool_use_id for x in state.approvals] == ["b"]
    assert decision_made(record, state, "a", True) is None, "a use is decided once"
    second = decision_made(record, state, "b", True)
    assert second is not None
    assert second[1].status == "queued"
    assert "approvals" not in second[1].bare()
    assert [x["approved"] for x in second[0].to_json()["approvals"]] == [False, True]
    assert ResumeRecord.from_json(second[0].to_json()) == second[0]


def test_after_a_crash_only_idempotent_uses_run_again() -> None:
    history = [
        messages_api.user_message("pay"),
        {"role": "assistant", "content": ASKS["content"]},
    ]
    record = ResumeRecord(asked=True, resumes=1, crashed=True)
    resume = resume_from(
        record, history, messages_api.WIRE, usage=messages_api.parse_reply(ASKS).usage,
        idempotent={"lookup"},
    )  # fmt: skip
    assert [u.id for u in resume.to_run()] == ["toolu_look"]
    interrupted = resume.answered["toolu_del"]
    assert interrupted.is_error
    assert "may or may not have run" in interrupted.content
    assert resume.why == "after a crash (resume 1)"


CAPTIONS = {"lookup": "activity.lookup", "delete_file": "activity.delete_file"}


async def test_a_waiting_tool_has_no_past_tense_caption_until_it_ran() -> None:
    """Issue 44: "Deleted a file" was published, streamed and projected while the turn
    waited for the reader's yes. Only the tool that ran has its caption; the waiting one
    shows its ask, and its caption comes once the approved use ran."""
    hooks = LocalHooks()
    setting = TurnSetting(resume=Resume(GATE), activities=CAPTIONS)
    waited = await run_turn(
        "delete a.txt", provider=ScriptedProvider([ASKS]), toolset=toolset([]), hooks=hooks,
        setting=setting,
    )  # fmt: skip
    captions = [e.body["key"] for e in hooks.log if e.type == "activity"]
    assert captions == [], "nothing of the round is captioned: the waiting use did not run"
    assert "activity.delete_file" not in [s.activity for s in hooks.published]
    assert waited.state.activity is None
    record = ResumeRecord.from_json(
        {
            "asked": True,
            "results": [{"tool_use_id": "toolu_look", "content": "found", "is_error": False}],
            "approvals": [{"tool_use_id": "toolu_del", "tool": "delete_file", "approved": True}],
        }
    )
    history = waited.history
    usage = messages_api.parse_reply(ASKS).usage
    resume = resume_from(record, history, messages_api.WIRE, usage, needs_approval=GATE)
    resumed = LocalHooks()
    await run_turn(
        "delete a.txt", provider=ScriptedProvider([scripts.answer("Gone.")]),
        toolset=toolset([]), history=history, hooks=resumed,
        setting=TurnSetting(resume=resume, activities=CAPTIONS),
    )  # fmt: skip
    shown = [e.body["key"] for e in resumed.log if e.type == "activity"]
    assert shown == ["activity.delete_file"], "once approved and run, it is captioned"
