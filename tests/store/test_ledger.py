"""The ledger (issue 31) on both stores: each write a turn makes adds its charge in its own
transaction and reads the day's totals back; subjects and days are kept apart; the door's
read counts one asker's turns of the last minute."""

from __future__ import annotations

from tests.store.test_contract import claimed_turn, running, write

from turnkeeper.store import Store, new_token
from turnkeeper.usage import Charge, Day, Usage


def charge(tokens: int, cost: float = 0.0, subject: str = "ada", day: str = "2026-12-02") -> Charge:
    return Charge(subject, day, tokens, cost)


async def test_every_write_charges_the_ledger_and_reads_the_day_back(store: Store) -> None:
    _, turn_id, fence = await claimed_turn(store)
    opened = charge(0)
    await store.publish(turn_id, fence, running(2), opened)
    assert opened.total == Day(0, 0.0), "a zero charge makes the day's row and reads it"
    used = charge(400, 0.0024)
    await store.record_usage(turn_id, fence, Usage(iterations=1, input_tokens=400), used)
    assert used.total is not None
    assert (used.total.tokens, round(used.total.cost_usd, 6)) == (400, 0.0024)
    checkpointed = charge(300)
    await store.checkpoint(turn_id, fence, write([], running(3)), checkpointed)
    assert checkpointed.total is not None
    assert checkpointed.total.tokens == 700
    final = charge(100, 0.001)
    await store.finish(turn_id, fence, write([], running(4, done=True)), final)
    assert final.total is not None
    assert final.total.tokens == 800
    kept = await store.ledger("ada", "2026-12-02")
    assert (kept.day.tokens, round(kept.day.cost_usd, 6)) == (800, 0.0034)
    assert (await store.ledger("bob", "2026-12-02")).day == Day(), "bob's is his own"
    assert (await store.ledger("ada", "2026-12-03")).day == Day(), "each UTC day its own"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert state["version"] == 4, "the writes themselves went through"


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
