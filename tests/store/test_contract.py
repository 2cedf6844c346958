"""The store contract: every test here runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from tests.waiting import eventually

from turnkeeper.outcomes import Outcome, Status, ending
from turnkeeper.state import Bubble, PublishedState, queued
from turnkeeper.store import (
    EXPIRED,
    WAITING,
    Busy,
    FenceLost,
    Store,
    hash_token,
    held_by,
    new_token,
    open_store,
)
from turnkeeper.store.records import Checkpoint, Guard, ModelCall, ResumeRecord, Taken
from turnkeeper.usage import Usage
from turnkeeper.wire import Message


async def queued_turn(store: Store, question: str = "hi") -> tuple[str, str]:
    _, token_hash = new_token()
    conversation_id = await store.create_conversation(token_hash)
    turn = await store.create_turn(conversation_id, question)
    return conversation_id, turn.turn_id


async def claimed_turn(store: Store, question: str = "hi") -> tuple[str, str, int]:
    """A new conversation's turn, claimed: its conversation, its id and its fence."""
    conversation_id, turn_id = await queued_turn(store, question)
    fence = await store.claim(turn_id, 30, "anthropic")
    assert fence is not None
    return conversation_id, turn_id, fence


def running(state_version: int, *messages: dict[str, Any], done: bool = False) -> PublishedState:
    return PublishedState(
        turn_id="t",
        conversation_id="c",
        version=state_version,
        status=Outcome.FINISHED if done else Status.RUNNING,
        done=done,
        stopped=False,
        has_error=False,
        activity=None,
        messages=tuple(Bubble.from_json({"role": "bot", **m}) for m in messages),
        usage=Usage(),
    )


def write(
    appended: Sequence[Message], state: PublishedState, usage: Usage | None = None, n: int = 1
) -> Checkpoint:
    return Checkpoint("t", n, appended, state, usage or Usage())


async def test_migrations_are_recorded_and_applied_once(store_url: str) -> None:
    first = await open_store(store_url)
    await first.migrate()  # again: nothing to do, nothing dropped
    conversation_id = await first.create_conversation(hash_token("x"))
    await first.close()
    second = await open_store(store_url)
    assert await second.guard(conversation_id) == Guard(hash_token("x"), None)
    await second.close()


async def test_a_new_turn_is_queued_at_version_1_with_its_question(store: Store) -> None:
    conversation_id, turn_id = await queued_turn(store, "what's on my todo list?")
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["version"], state["status"], state["done"]) == (1, "queued", False)
    assert state["messages"] == [{"id": "m1", "role": "user", "text": "what's on my todo list?"}]
    assert await store.state_after(turn_id, 1) is None
    turn = await store.turn(turn_id)
    assert turn is not None
    assert turn.conversation_id == conversation_id
    assert await store.turn("t_missing") is None


async def test_the_guard_holds_the_token_hash_and_the_owner(store: Store) -> None:
    owner = "auth0|ünïcode-" + "x" * 300
    owned = await store.create_conversation(hash_token("a"), owner=owner)
    token_only = await store.create_conversation(hash_token("b"))
    assert await store.guard(owned) == Guard(hash_token("a"), owner)
    assert await store.guard(token_only) == Guard(hash_token("b"), None)
    assert await store.guard("c_missing") is None


async def test_a_turn_keeps_who_asked_it_and_in_which_locale(store: Store) -> None:
    conversation_id = await store.create_conversation(hash_token("a"), owner="u_1")
    asked = await store.create_turn(conversation_id, "olá?", user="u_1", locale="pt-BR")
    assert (asked.user, asked.locale) == ("u_1", "pt-BR")
    assert await store.turn(asked.turn_id) == asked
    _, turn_id = await queued_turn(store)
    plain = await store.turn(turn_id)
    assert plain is not None
    assert (plain.user, plain.locale) == (None, "en"), "asked with the token alone, in English"


async def test_a_claimed_turn_starts_from_its_row_and_its_state_as_last_published(
    store: Store,
) -> None:
    conversation_id = await store.create_conversation(hash_token("a"), owner="u_1")
    asked = await store.create_turn(conversation_id, "olá?", user="u_1", locale="pt-BR")
    fence = await store.claim(asked.turn_id, 30, "anthropic")
    assert fence is not None
    start = await store.start(asked.turn_id)
    assert start is not None
    assert start.turn == await store.turn(asked.turn_id)
    assert (start.turn.question, start.turn.user, start.turn.locale) == ("olá?", "u_1", "pt-BR")
    assert start.state == queued(asked.turn_id, conversation_id, "olá?")
    polled = await store.state_after(asked.turn_id, 0)
    assert polled is not None
    assert start.state == PublishedState.from_json(polled), "what a poll reads, typed"
    started = running(2, {"id": "m1", "role": "user", "text": "olá?"})
    await store.publish(asked.turn_id, fence, started)
    again = await store.start(asked.turn_id)
    assert again is not None
    assert again.state == started
    assert again.turn.version == 2
    assert await store.start("t_missing") is None


async def finished_turn(store: Store, conversation_id: str, question: str) -> None:
    """A turn asked and finished, so the conversation takes the next one."""
    turn = await store.create_turn(conversation_id, question)
    fence = await store.claim(turn.turn_id, 30, "anthropic")
    assert fence is not None
    await store.finish(turn.turn_id, fence, write([], running(2, done=True), Usage()))


async def test_an_owners_conversations_newest_first_titled_by_their_first_question(
    store: Store,
) -> None:
    first = await store.create_conversation(hash_token("a"), owner="ann")
    await store.create_conversation(hash_token("b"), owner="bob")
    await store.create_conversation(hash_token("c"))
    second = await store.create_conversation(hash_token("d"), owner="ann")
    third = await store.create_conversation(hash_token("e"), owner="ann")
    await finished_turn(store, first, "first question")
    await store.create_turn(first, "second question")
    await store.create_turn(second, "only question")
    listed = await store.conversations("ann")
    assert [c.conversation_id for c in listed] == [third, second, first]
    assert [c.title for c in listed] == [None, "only question", "first question"]
    created = [c.created for c in listed]
    assert created == sorted(created, reverse=True)
    assert all(abs(t - time.time()) < 60 for t in created), "Unix seconds"
    limited = await store.conversations("ann", limit=2)
    assert [c.conversation_id for c in limited] == [third, second]
    assert await store.conversations("ann", limit=0) == []
    assert await store.conversations("nobody") == []


async def test_one_open_turn_per_conversation(store: Store) -> None:
    conversation_id, turn_id = await queued_turn(store)
    with pytest.raises(Busy):
        await store.create_turn(conversation_id, "again")
    assert await store.open_turn(conversation_id) == turn_id, "queued"
    fence = await store.claim(turn_id, 30, "anthropic")
    assert fence is not None
    assert await store.open_turn(conversation_id) == turn_id, "running"
    final = running(2, {"id": "m1", "role": "user", "text": "hi"}, {"id": "m2"}, done=True)
    await store.finish(turn_id, fence, write([], final, Usage()))
    assert await store.open_turn(conversation_id) is None, "done"
    assert await store.open_turn("c_missing") is None
    second = await store.create_turn(conversation_id, "next")
    assert second.message_offset == 2, "message ids continue after the earlier turns"
    assert await store.open_turn(conversation_id) == second.turn_id


async def test_queued_turns_are_listed_until_claimed(store: Store) -> None:
    _, first = await queued_turn(store)
    _, second = await queued_turn(store)
    assert await store.queued() == [first, second]
    assert await store.claim(first, 30, "anthropic") == 1
    assert await store.queued() == [second]


async def test_a_turn_is_claimed_once(store: Store) -> None:
    _, turn_id = await queued_turn(store)
    fences = await asyncio.gather(*(store.claim(turn_id, 30, "anthropic") for _ in range(4)))
    assert sorted(fences, key=lambda f: f or 0)[:3] == [None, None, None]
    assert [f for f in fences if f is not None] == [1]


async def test_versions_strictly_increase(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    await store.publish(turn_id, fence, running(2))
    with pytest.raises(FenceLost):
        await store.publish(turn_id, fence, running(2))
    await store.publish(turn_id, fence, running(3))
    assert await store.state_after(turn_id, 2) == running(3).to_json()


async def test_checkpoints_append_history_and_finish_writes_the_tail(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    first: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"n": 1}]},
    ]
    await store.checkpoint(turn_id, fence, write(first, running(2), n=1))
    second = [{"role": "user", "content": [{"n": 2}]}]
    await store.checkpoint(turn_id, fence, write(second, running(3), n=2))
    assert await store.history(conversation_id) == first + second
    tail = [{"role": "assistant", "content": [{"n": 3}]}]
    await store.finish(turn_id, fence, write(tail, running(4, done=True), Usage(iterations=3)))
    assert await store.history(conversation_id) == first + second + tail
    assert await store.take_over(turn_id, held_by(fence)) is None, (
        "a finished turn is not taken over"
    )


async def test_usage_is_kept_as_recorded(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    await store.record_usage(turn_id, fence, Usage(iterations=1, input_tokens=7, output_tokens=3))
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    assert recovery.usage == Usage(iterations=1, input_tokens=7, output_tokens=3)


async def test_take_over_recovers_the_last_checkpoint(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store, "q")
    question = {"id": "m1", "role": "user", "text": "q"}
    await store.publish(turn_id, fence, running(2, question))
    appended: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": []},
    ]
    checkpointed = running(3, question, {"id": "m2", "text": "looking"})
    await store.checkpoint(turn_id, fence, write(appended, checkpointed, n=1))
    await store.record_usage(turn_id, fence, Usage(iterations=2))
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    assert recovery.fence == fence + 1
    assert recovery.checkpointed
    assert recovery.state == checkpointed
    assert recovery.version == 3
    assert recovery.usage == Usage(iterations=2), "usage as last recorded"
    assert recovery.last_message == appended[-1]
    assert (recovery.question, recovery.wire) == ("q", "anthropic")


async def test_take_over_before_any_checkpoint_recovers_the_published_state(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store, "q")
    started = running(2, {"id": "m1", "role": "user", "text": "q"})
    await store.publish(turn_id, fence, started)
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    assert not recovery.checkpointed, "the question is not in the history yet"
    assert recovery.state == started
    assert recovery.last_message is None


async def test_a_stale_fence_is_refused_on_every_write(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    assert await store.take_over(turn_id, held_by(fence)) is not None
    with pytest.raises(FenceLost):
        await store.publish(turn_id, fence, running(5))
    with pytest.raises(FenceLost):
        await store.record_usage(turn_id, fence, Usage(iterations=9))
    shown = running(5, {"id": "m1", "role": "user", "text": "hi"}, {"id": "m2", "text": "no"})
    call = ModelCall(1, 0.0, 10.0, duration=0.1, stop_reason="end_turn")
    step = write([{"role": "user", "content": "x"}], shown, Usage(iterations=1), n=1)
    with pytest.raises(FenceLost):
        await store.checkpoint(turn_id, fence, replace(step, calls=[call]))
    final = write([{"role": "user", "content": "y"}], replace(shown, done=True), Usage())
    with pytest.raises(FenceLost):
        await store.finish(turn_id, fence, replace(final, calls=[call]))
    assert not await store.renew(turn_id, fence, 30)
    turn = await store.turn(turn_id)
    assert turn is not None
    assert turn.version == 1
    assert await store.history(turn.conversation_id) == []
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert [m["id"] for m in state["messages"]] == ["m1"], "no bubble written"
    assert await store.iterations(turn_id) == [], "no model call written"


async def test_a_write_not_above_the_stored_version_is_refused_with_nothing_written(
    store: Store,
) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    first = [{"role": "user", "content": "hi"}]
    await store.checkpoint(turn_id, fence, write(first, running(3), Usage(iterations=1), n=1))
    again = write([{"role": "user", "content": "x"}], running(3, {"id": "m2"}), Usage(1, 9, 9))
    call = ModelCall(2, 0.0, 10.0, duration=0.1, stop_reason="end_turn")
    with pytest.raises(FenceLost):
        await store.checkpoint(turn_id, fence, replace(again, calls=[call]))
    with pytest.raises(FenceLost):
        await store.finish(turn_id, fence, replace(again, state=running(2, done=True)))
    assert await store.history(conversation_id) == first
    assert await store.state_after(turn_id, 0) == running(3).to_json()
    assert await store.iterations(turn_id) == []
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    assert recovery.usage == Usage(iterations=1)


async def test_several_messages_appended_by_one_write_keep_their_order(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    roles = ("user", "assistant")
    first = [{"role": roles[n % 2], "content": [{"n": n}]} for n in range(12)]
    await store.checkpoint(turn_id, fence, write(first, running(2), n=1))
    tail = [{"role": roles[n % 2], "content": [{"n": n}]} for n in range(12, 21)]
    await store.finish(turn_id, fence, write(tail, running(3, done=True), Usage()))
    assert await store.history(conversation_id) == first + tail


async def test_bubbles_past_those_stored_are_added_and_fewer_drop_the_rest(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store, "q")
    q = {"id": "m1", "role": "user", "text": "q"}
    a, b, c, d = ({"id": f"m{n}", "text": t} for n, t in enumerate("abcd", start=2))

    async def shown(state: PublishedState) -> None:
        assert await store.state_after(turn_id, 0) == state.to_json()

    await store.publish(turn_id, fence, running(2, q))
    await shown(running(2, q))
    await store.checkpoint(turn_id, fence, write([], running(3, q, a, b), n=1))
    await shown(running(3, q, a, b))
    await store.checkpoint(turn_id, fence, write([], running(4, q, a), n=2))
    await shown(running(4, q, a))
    await store.checkpoint(turn_id, fence, write([], running(5, q, a, c), n=3))
    await shown(running(5, q, a, c))
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    assert recovery.state == running(5, q, a, c)
    final = running(6, q, a, c, d, done=True)
    await store.finish(turn_id, recovery.fence, write([], final, Usage()))
    await shown(final)
    each = [{**m, "turn_id": turn_id} for m in final.to_json()["messages"]]
    assert (await store.transcript(conversation_id)).messages == each


async def test_leases_expire_unless_renewed(store: Store) -> None:
    _, turn_id = await queued_turn(store)
    _, other = await queued_turn(store)
    fence = await store.claim(turn_id, 0.05, "anthropic")
    assert fence is not None
    assert await store.claim(other, 300, "anthropic") is not None

    async def expired() -> bool:
        return turn_id in await store.expired()

    await eventually(expired, "the short lease expiring")
    assert other not in await store.expired()
    assert await store.renew(turn_id, fence, 300)
    assert turn_id not in await store.expired()
    assert await store.take_over(turn_id, EXPIRED) is None, "a live lease is not taken over"


async def test_cancel_flag_is_set_and_cleared_by_the_final_write(store: Store) -> None:
    _, turn_id = await queued_turn(store)
    assert not await store.cancel_requested(turn_id)
    await store.request_cancel(turn_id)
    assert await store.cancel_requested(turn_id)
    fence = await store.claim(turn_id, 30, "anthropic")
    assert fence is not None
    await store.finish(turn_id, fence, write([], running(2, done=True), Usage()))
    assert not await store.cancel_requested(turn_id)


async def test_a_checkpoint_reads_back_the_cancel_flag_with_its_write(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    first = [{"role": "user", "content": "hi"}]
    assert await store.checkpoint(turn_id, fence, write(first, running(2), n=1)) is False
    await store.request_cancel(turn_id)
    assert await store.checkpoint(turn_id, fence, write([], running(3), n=2)) is True
    assert await store.cancel_requested(turn_id), "a checkpoint leaves the flag set"


async def test_transcript_and_counts(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store, "one")
    done = running(2, {"id": "m1", "text": "one"}, {"id": "m2", "text": "answer"}, done=True)
    await store.finish(turn_id, fence, write([], done, Usage()))
    await store.create_turn(conversation_id, "two")
    assert [m["id"] for m in (await store.transcript(conversation_id)).messages] == [
        "m1",
        "m2",
        "m3",
    ]
    assert await store.counts() == {"finished": 1, "queued": 1}


async def test_wire_data_is_kept_as_it_came_nul_characters_and_key_order_included(
    store: Store,
) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    odd: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "a\x00b", "z": 1, "a": 2}]},
    ]
    question = {"id": "m1", "role": "user", "text": "hi"}
    bubble = {"id": "m2", "role": "bot", "text": "a\x00b"}
    await store.checkpoint(turn_id, fence, write(odd, running(2, question, bubble), n=1))
    tail = [{"role": "user", "content": [{"type": "tool_result", "content": "\x00"}]}]
    final = running(3, question, bubble, done=True)
    await store.finish(turn_id, fence, write(tail, final, Usage(iterations=1)))
    history = await store.history(conversation_id)
    assert history == odd + tail
    assert list(history[1]["content"][0]) == ["type", "text", "z", "a"]
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert state["messages"][-1]["text"] == "a\x00b"


async def test_one_write_per_iteration_publishes_its_state_and_keeps_its_model_calls(
    store: Store,
) -> None:
    _, turn_id, fence = await claimed_turn(store, "q")
    first = ModelCall(
        1, 0.0, 10.0, duration=0.25, stop_reason="tool_use", tools=["read_file"],
        usage=Usage(1, 12, 5), decision="continue", caption="activity.read_file",
    )  # fmt: skip
    question = {"id": "m1", "role": "user", "text": "q"}
    step = write([{"role": "user", "content": "q"}], running(2, question), Usage(1, 12, 5))
    await store.checkpoint(turn_id, fence, replace(step, calls=[first]))
    assert await store.state_after(turn_id, 1) == running(2, question).to_json()
    last = ModelCall(2, 0.5, 9.0, duration=0.5, stop_reason="end_turn", decision="finished")
    final = write([], running(3, question, done=True), Usage(2, 30, 9))
    await store.finish(turn_id, fence, replace(final, calls=[last]))
    records = await store.iterations(turn_id)
    assert [r["iteration"] for r in records] == [1, 2]
    assert records[0] == {
        "iteration": 1,
        "stop_reason": "tool_use",
        "error": None,
        "input_tokens": 12,
        "output_tokens": 5,
        "seconds": 0.25,
        "tools": ["read_file"],
        "caption": "activity.read_file",
        "decision": "continue",
    }
    assert records[1]["stop_reason"] == "end_turn"


async def test_a_transcript_page_is_read_by_the_store(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store, "one")
    done = running(2, {"id": "m1", "text": "one"}, {"id": "m2", "text": "answer"}, done=True)
    await store.finish(turn_id, fence, write([], done, Usage()))
    await store.create_turn(conversation_id, "two")  # m3, its question

    async def page(**asked: int | None) -> tuple[int, list[str]]:
        read = await store.transcript(conversation_id, **asked)  # type: ignore[arg-type]
        return read.first, [m["id"] for m in read.messages]

    assert await page(limit=2) == (1, ["m2", "m3"])  # the newest two
    assert await page(before=1, limit=2) == (0, ["m1"])
    assert await page(before=3, limit=1) == (2, ["m3"])
    assert await page(before=99, limit=2) == (1, ["m2", "m3"])
    assert await page(before=0, limit=5) == (0, [])
    assert await page() == (0, ["m1", "m2", "m3"])


# ---- ending a turn in one step, and queueing one again, under the fence ----------------


def ended_as(status: Outcome) -> Callable[[Taken], Checkpoint]:
    """A `Close` that ends the turn taken over with `status`, counting its calls."""

    def close(taken: Taken) -> Checkpoint:
        recovery = taken.recovery
        final = recovery.state.ended(ending(status), text=None, usage=recovery.usage)
        return Checkpoint(recovery.turn_id, 0, [], final, recovery.usage)

    return close


async def test_end_turn_takes_over_and_ends_in_one_step_once(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    await store.publish(turn_id, fence, running(2))
    await store.request_cancel(turn_id)
    ended = await store.end_turn(turn_id, held_by(fence), ended_as(Outcome.STOPPED))
    assert ended is not None
    assert ended.taken.cancel, "the cancel flag is read in the same transaction"
    assert ended.taken.recovery.fence == fence + 1
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"], state["version"]) == ("stopped", True, 3)
    assert not await store.cancel_requested(turn_id), "the final write clears the flag"
    again = await store.end_turn(turn_id, held_by(fence + 1), ended_as(Outcome.FAILED))
    assert again is None, "a turn already ended is not ended again"
    assert await store.state_after(turn_id, 0) == state


async def test_end_turn_of_a_turn_not_in_that_position_writes_nothing(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    await store.publish(turn_id, fence, running(2))
    before = await store.state_after(turn_id, 0)
    assert await store.end_turn(turn_id, WAITING, ended_as(Outcome.STOPPED)) is None
    assert await store.end_turn(turn_id, held_by(fence + 7), ended_as(Outcome.FAILED)) is None
    assert await store.end_turn(turn_id, EXPIRED, ended_as(Outcome.FAILED)) is None
    assert await store.state_after(turn_id, 0) == before
    await store.publish(turn_id, fence, running(3))  # the holder's fence still holds


async def test_of_ten_parties_ending_one_waiting_turn_one_ends_it(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    waiting = running(2).waiting(None, Usage(), (), ())
    await store.wait(turn_id, fence, ResumeRecord(asked=True))
    await store.checkpoint(turn_id, fence, write([], waiting, n=0))
    closes = [ended_as(Outcome.STOPPED) for _ in range(10)]
    ends = await asyncio.gather(*(store.end_turn(turn_id, WAITING, c) for c in closes))
    assert sum(e is not None for e in ends) == 1, "one ends it, the others learn it was decided"
    won = next(e for e in ends if e is not None)
    assert won.taken.record == ResumeRecord(asked=True)
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"]) == ("stopped", True)


class _Unwritable(ResumeRecord):
    """A resume record the store cannot encode: the write fails after its publish."""

    def to_json(self) -> dict[str, Any]:
        raise RuntimeError("cannot encode this record")


async def test_requeue_is_one_transaction_under_the_fence(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    await store.publish(turn_id, fence, running(2))
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    before = await store.state_after(turn_id, 0)
    record = ResumeRecord(asked=True, resumes=1, crashed=True)
    with pytest.raises(FenceLost):
        await store.requeue(turn_id, fence, record, recovery.state.requeued())
    assert await store.state_after(turn_id, 0) == before, "a stale fence changes nothing"
    assert await store.resume_record(turn_id) is None
    with pytest.raises(RuntimeError):
        await store.requeue(turn_id, recovery.fence, _Unwritable(), recovery.state.requeued())
    assert await store.state_after(turn_id, 0) == before, "nothing half written"
    assert await store.resume_record(turn_id) is None
    await store.requeue(turn_id, recovery.fence, record, recovery.state.requeued())
    assert await store.resume_record(turn_id) == record
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["version"]) == ("queued", 3)
    assert await store.queued() == [turn_id]
