"""The call log (turn/call_log.py): each model call's record is built once, whole, from
what was learnt of the call as it went on; a checkpoint taken before its tools ran holds it
as it stood then."""

from __future__ import annotations

from turnkeeper.errors import ProviderUnavailable
from turnkeeper.store.records import ModelCall
from turnkeeper.turn.call_log import CallLog
from turnkeeper.usage import Usage


def test_a_record_holds_everything_learnt_of_its_call() -> None:
    log = CallLog(earlier=2, resumed="after approval")
    assert log.began(1.5, 60.0) == 3, "a resumed turn numbers on from its earlier calls"
    log.ended(0.25, {"id": "r"}, None, "tool_use", ["read_file"], Usage(1, 10, 2), "m")
    log.decided("continue", "activity.read_file")
    log.tools_took(0.5)
    log.close()
    assert log.records == [
        ModelCall(
            iteration=3, started=1.5, timeout=60.0, duration=0.25, response={"id": "r"},
            stop_reason="tool_use", tools=["read_file"], decision="continue",
            caption="activity.read_file", tools_duration=0.5, usage=Usage(1, 10, 2),
            model="m", resumed="after approval",
        )
    ]  # fmt: skip
    assert log.began(3.0, 60.0) == 4
    log.close()
    assert log.records[1].resumed is None, "only the job's first call says why it resumed"


def test_a_record_is_built_once_and_handed_out_as_built() -> None:
    log = CallLog()
    log.began(0.0, 10.0)
    log.ended(1.0, {}, stop_reason="end_turn")
    log.close()
    [record] = log.records
    assert isinstance(record, ModelCall)
    assert log.records[0] is record, "the log hands out the record it built, not a copy"


def test_a_checkpoint_before_the_tools_holds_the_call_as_it_stood() -> None:
    log = CallLog()
    log.began(0.0, 10.0)
    log.ended(1.0, {}, stop_reason="tool_use", tools=["lookup"])
    log.decided("continue", None)
    [early] = log.since(0)
    assert early.tools_duration is None
    written = log.made
    log.tools_took(2.0)
    log.close()
    assert log.since(written) == [], "a call written once is not written again"
    assert log.records[0].tools_duration == 2.0, "the trace has the whole call"


def test_a_call_in_flight_when_the_deadline_passed_ends_as_an_error() -> None:
    log = CallLog()
    assert not log.unanswered(ProviderUnavailable("late")), "no call was made"
    log.began(0.0, 10.0)
    log.ended(5.0)  # cut off: no response, no error
    assert log.unanswered(ProviderUnavailable("late"))
    log.close()
    error = log.records[0].error
    assert error is not None
    assert (error["kind"], error["message"]) == ("ProviderUnavailable", "late")


def test_an_answered_call_is_not_made_an_error_by_the_deadline() -> None:
    log = CallLog()
    log.began(0.0, 10.0)
    log.ended(1.0, {}, stop_reason="tool_use")
    assert not log.unanswered(ProviderUnavailable("late"))


def test_a_record_handed_to_a_write_is_never_changed_after() -> None:
    """The record in progress is filled in place until a write takes it; what comes in
    after goes into a copy, so what a checkpoint holds stays as it was written."""
    log = CallLog()
    log.began(0.0, 10.0)
    [handed] = log.since(0)
    log.ended(1.0, {"id": "r"}, stop_reason="tool_use", tools=["lookup"])
    log.decided("continue", "activity.lookup")
    assert (handed.response, handed.decision, handed.caption) == (None, None, None)
    log.close()
    [record] = log.records
    assert record is not handed
    assert (record.response, record.decision, record.tools) == ({"id": "r"}, "continue", ["lookup"])


def test_what_was_written_and_what_a_write_takes_add_up_to_the_calls_made() -> None:
    """The loop counts the calls written as those written before plus what `since` handed
    out (no second look at the log per write): that is `made`, whatever the log holds."""
    log, written = CallLog(), 0
    for step in ("begin", "write", "write", "begin", "begin", "write", "close", "write"):
        if step == "begin":
            log.began(0.0, 10.0)
        elif step == "close":
            log.close()
        else:
            written += len(log.since(written))
            assert written == log.made, step
