"""The reader's controls on both stores: a conversation deleted whole, renamed, and the
feedback given on a turn (store/controls.py)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from tests.store.test_contract import claimed_turn, running, write

from turnkeeper.store import Busy, NoConversation, NoTurn, Store, new_token
from turnkeeper.store.records import EventType, Guard, ModelCall
from turnkeeper.usage import Limits, today


async def finished(store: Store, question: str = "hi", owner: str = "ann") -> tuple[str, str]:
    """A conversation of `owner` with one finished turn that made one model call."""
    conversation_id = await store.create_conversation(new_token()[1], owner=owner)
    turn = await store.create_turn(conversation_id, question)
    fence = await store.claim(turn.turn_id, 30, "anthropic")
    assert fence is not None
    await store.append_events(turn.turn_id, fence, [(EventType.TURN_STARTED, {})])
    call = ModelCall(1, 0.0, 10.0, duration=0.1, stop_reason="end_turn", model="claude-x")
    answer = {"id": "m2", "text": "hello"}
    final = write([{"role": "user", "content": question}], running(2, answer, done=True))
    await store.finish(turn.turn_id, fence, replace(final, calls=[call]))
    return conversation_id, turn.turn_id


async def test_a_deleted_conversation_leaves_nothing_of_it(store: Store) -> None:
    conversation_id, turn_id = await finished(store)
    kept_conversation, kept_turn = await finished(store, "other")
    assert await store.iterations(turn_id) != []
    assert await store.give_feedback(turn_id, "up", None) is not None

    assert await store.delete_conversation(conversation_id, stop=False) is True

    assert await store.guard(conversation_id) is None
    assert await store.turn(turn_id) is None
    assert await store.history(conversation_id) == []
    assert (await store.transcript(conversation_id)).messages == []
    assert await store.iterations(turn_id) == []
    assert await store.events_after(turn_id, 0) == []
    assert await store.feedback(0.0) == []
    assert [c.conversation_id for c in await store.conversations("ann")] == [kept_conversation]
    assert await store.iterations(kept_turn) != []
    assert await store.delete_conversation(conversation_id, stop=False) is False


async def test_no_turn_is_made_in_a_conversation_that_is_gone(store: Store) -> None:
    conversation_id = await store.create_conversation(new_token()[1], owner="ann")
    assert await store.delete_conversation(conversation_id, stop=False) is True
    for limits in (None, Limits(turns_per_minute=5)):
        with pytest.raises(NoConversation):
            await store.create_turn(conversation_id, "hi", user="ann", limits=limits)
    with pytest.raises(NoConversation):
        await store.create_turn("c_never", "hi")
    assert await store.counts() == {}
    assert (await store.transcript(conversation_id)).messages == []
    assert (await store.ledger("ann", today())).recent == ()


async def test_a_poll_of_a_turn_that_is_gone_says_so(store: Store) -> None:
    conversation_id, turn_id = await finished(store)
    polled = await store.poll(turn_id, 0)
    assert polled is not None
    assert polled["done"] is True
    assert await store.poll(turn_id, 99) is None, "remembered (SQLite): nothing newer"
    assert await store.delete_conversation(conversation_id, stop=False) is True
    for after in (0, 99):
        with pytest.raises(NoTurn):
            await store.poll(turn_id, after)
    with pytest.raises(NoTurn):
        await store.poll("t_never", 0)
    assert await store.state_after(turn_id, 0) is None, "state_after: None, as it always was"


async def test_a_turns_conversation_and_guard_are_read_together(store: Store) -> None:
    token_hash = new_token()[1]
    conversation_id = await store.create_conversation(token_hash, owner="ann")
    turn = await store.create_turn(conversation_id, "hi")
    assert await store.turn_guard(turn.turn_id) == (conversation_id, Guard(token_hash, "ann"))
    assert await store.turn_guard("t_never") is None
    assert await store.delete_conversation(conversation_id, stop=True) is True
    assert await store.turn_guard(turn.turn_id) is None


async def test_a_conversation_with_a_turn_not_done_is_deleted_only_when_stopped(
    store: Store,
) -> None:
    conversation_id, turn_id, _ = await claimed_turn(store)
    with pytest.raises(Busy):
        await store.delete_conversation(conversation_id, stop=False)
    assert await store.turn(turn_id) is not None
    assert await store.delete_conversation(conversation_id, stop=True) is True
    assert await store.turn(turn_id) is None


async def test_a_renamed_conversation_is_listed_by_its_title(store: Store) -> None:
    conversation_id, _ = await finished(store, "what is on my list?")
    assert await store.rename_conversation(conversation_id, "Groceries") == "Groceries"
    assert [c.title for c in await store.conversations("ann")] == ["Groceries"]
    assert await store.rename_conversation(conversation_id, None) == "what is on my list?"
    assert [c.title for c in await store.conversations("ann")] == ["what is on my list?"]
    with pytest.raises(NoConversation):
        await store.rename_conversation("c_missing", "x")


async def test_feedback_is_kept_once_per_turn_and_exported(store: Store) -> None:
    before = time.time() - 1
    conversation_id, turn_id = await finished(store, "q?")
    assert (await store.transcript(conversation_id)).ratings == {}
    given = await store.give_feedback(turn_id, "down", "wrong answer")
    assert given is not None
    assert (given.outcome, given.model) == ("finished", "claude-x")
    assert await store.give_feedback(turn_id, "up", None) is not None  # changed, not added
    assert (await store.transcript(conversation_id)).ratings == {turn_id: "up"}, "the page says it"
    exported = await store.feedback(before)
    assert [(f.turn_id, f.rating, f.comment) for f in exported] == [(turn_id, "up", None)]
    assert exported[0].conversation_id == conversation_id
    assert exported[0].question == "q?"
    assert exported[0].outcome == "finished"
    kept = await store.feedback_of(turn_id)
    assert kept is not None
    assert kept.rating == "up"
    assert kept.at >= before
    assert await store.feedback(time.time() + 60) == []


async def test_feedback_waits_for_the_turn_to_be_done(store: Store) -> None:
    _, turn_id, _ = await claimed_turn(store)
    assert await store.give_feedback(turn_id, "up", None) is None
    assert await store.give_feedback("t_missing", "up", None) is None
    assert await store.feedback_of(turn_id) is None
