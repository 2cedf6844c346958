"""The ledger (issue 31) on both stores: each write a turn makes adds its charge in its own
transaction, and those a model call may follow read the day's totals back (a charge that
adds nothing only reads, making no row); subjects and days are kept apart; the door's
read counts one asker's turns of the last minute."""

from __future__ import annotations

import pytest
from tests.store.test_contract import claimed_turn, running, write

from turnkeeper.store import FenceLost, Store, new_token
from turnkeeper.usage import Charge, Day, Usage


def charge(tokens: int, cost: float = 0.0, subject: str = "ada", day: str = "2026-12-02") -> Charge:
    return Charge(subject, day, tokens, cost)


async def test_every_write_charges_the_ledger_and_those_a_call_may_follow_read_the_day(
    store: Store,
) -> None:
    _, turn_id, fence = await claimed_turn(store)
    opened = charge(0)
    await store.publish(turn_id, fence, running(2), opened)
    assert opened.total == Day(0, 0.0), "a charge that adds nothing reads the day (no row yet)"
    assert (await store.ledger("ada", "2026-12-02")).day == Day(), "and makes no row"
    used = charge(400, 0.0024)
    await store.record_usage(turn_id, fence, Usage(iterations=1, input_tokens=400), used)
    assert used.total is None, "the usage record adds; the checkpoint after the tools reads"
    kept = await store.ledger("ada", "2026-12-02")
    assert (kept.day.tokens, round(kept.day.cost_usd, 6)) == (400, 0.0024)
    after_tools = charge(0)
    await store.checkpoint(turn_id, fence, write([], running(3)), after_tools)
    assert after_tools.total is not None
    assert (after_tools.total.tokens, round(after_tools.total.cost_usd, 6)) == (400, 0.0024)
    checkpointed = charge(300)
    await store.checkpoint(turn_id, fence, write([], running(4)), checkpointed)
    assert checkpointed.total is not None, "a checkpoint that adds reads the sum back"
    assert checkpointed.total.tokens == 700
    final = charge(100, 0.001)
    await store.finish(turn_id, fence, write([], running(5, done=True)), final)
    assert final.total is None, "no call follows the final write"
    kept = await store.ledger("ada", "2026-12-02")
    assert (kept.day.tokens, round(kept.day.cost_usd, 6)) == (800, 0.0034)
    assert (await store.ledger("bob", "2026-12-02")).day == Day(), "bob's is his own"
    assert (await store.ledger("ada", "2026-12-03")).day == Day(), "each UTC day its own"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert state["version"] == 5, "the writes themselves went through"


async def test_a_refused_write_reads_nothing(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    for refused in (
        store.publish(turn_id, fence + 1, running(2), read := charge(0)),
        store.checkpoint(turn_id, fence + 1, write([], running(2)), also := charge(0)),
        store.record_usage(turn_id, fence + 1, Usage(iterations=1), recorded := charge(0)),
    ):
        with pytest.raises(FenceLost):
            await refused
    assert (read.total, also.total, recorded.total) == (None, None, None)


async def test_the_usage_recorded_with_a_charge_is_the_turns(store: Store) -> None:
    from turnkeeper.store import held_by

    _, turn_id, fence = await claimed_turn(store)
    await store.record_usage(turn_id, fence, Usage(iterations=1, output_tokens=9), charge(9))
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    assert recovery.usage == Usage(iterations=1, output_tokens=9)


async def test_the_door_counts_one_askers_turns_of_the_last_minute(store: Store) -> None:
    for user in ("ada", "ada", "bob", None):
        conversation_id = await store.create_conversation(new_token()[1], owner=user)
        await store.create_turn(conversation_id, "hi", user=user)
    ada = await store.ledger("ada", "2026-12-02")
    assert len(ada.recent) == 2
    assert all(0 <= age < 60 for age in ada.recent)
    assert len((await store.ledger(None, "2026-12-02")).recent) == 1, "the unsigned ones"
    assert (await store.ledger("ada", "2026-12-02", window=0.0)).recent == ()
