"""The ledger (issue 31) on both stores: each write a turn makes adds its charge in its own
transaction, and those a model call may follow read the day's totals back (a charge that
adds nothing only reads, making no row); subjects and days are kept apart; the door's
read counts one asker's turns of the last minute."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.store.test_contract import claimed_turn, running, write

from turnkeeper.store import FenceLost, Store, new_token
from turnkeeper.store.dialect import Exec
from turnkeeper.store.sql import SqlStore
from turnkeeper.store.sqlite import SqliteStore
from turnkeeper.usage import Charge, Day, Usage, today


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
    assert_read_on_sqlite_only(store, used, 400)
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
    assert_read_on_sqlite_only(store, final, 800)
    kept = await store.ledger("ada", "2026-12-02")
    assert (kept.day.tokens, round(kept.day.cost_usd, 6)) == (800, 0.0034)
    assert (await store.ledger("bob", "2026-12-02")).day == Day(), "bob's is his own"
    assert (await store.ledger("ada", "2026-12-03")).day == Day(), "each UTC day its own"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert state["version"] == 5, "the writes themselves went through"


def assert_read_on_sqlite_only(store: Store, made: Charge, tokens: int) -> None:
    """A write no call follows (the usage record: the checkpoint after the tools comes
    first; the final write) reads nothing back on PostgreSQL, to spare its statement the
    work; SQLite's database thread keeps the days, so every charge answers them at once."""
    if isinstance(store, SqliteStore):
        assert made.total is not None
        assert made.total.tokens == tokens
    else:
        assert made.total is None


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


async def test_a_charged_statement_is_sqlites_and_postgresql_refuses_one_saying_so(
    store: Store,
) -> None:
    """SQLite's writes carry their charge on the statement that changes the turn's row;
    PostgreSQL's carry it in their own SQL, so its executor, handed a charged statement,
    refuses it rather than drop the charge, and nothing is written."""
    assert isinstance(store, SqlStore)
    _, turn_id, _ = await claimed_turn(store)
    touch = store.dialect.sql("UPDATE turns SET locale = locale WHERE turn_id = ?")
    made = charge(5)
    if isinstance(store, SqliteStore):
        assert await store.executor.write(Exec(touch, (turn_id,), made)) == 1
        assert made.total == Day(5, 0.0)
        assert (await store.ledger("ada", "2026-12-02")).day == Day(5, 0.0)
        missed = charge(7)
        assert await store.executor.write(Exec(touch, ("no-such-turn",), missed)) == 0
        assert missed.total is None, "a statement that changed no row charges nothing"
        assert (await store.ledger("ada", "2026-12-02")).day == Day(5, 0.0)
    else:
        with pytest.raises(TypeError, match="PostgreSQL charges in the write's SQL"):
            await store.executor.write(Exec(touch, (turn_id,), made))
        assert made.total is None
        assert (await store.ledger("ada", "2026-12-02")).day == Day()


async def test_the_door_counts_one_askers_turns_of_the_last_minute(store: Store) -> None:
    for user in ("ada", "ada", "bob", None):
        conversation_id = await store.create_conversation(new_token()[1], owner=user)
        await store.create_turn(conversation_id, "hi", user=user)
    ada = await store.ledger("ada", "2026-12-02")
    assert len(ada.recent) == 2
    assert all(0 <= age < 60 for age in ada.recent)
    assert len((await store.ledger(None, "2026-12-02")).recent) == 1, "the unsigned ones"
    assert (await store.ledger("ada", "2026-12-02", window=0.0)).recent == ()


async def test_sqlite_processes_on_one_file_each_see_the_others_charges(tmp_path: Path) -> None:
    """Each SQLite store keeps the days it charged; another process's commit (here, another
    store on the same file) makes it read them again."""
    path = tmp_path / "shared.db"
    first, second = SqliteStore(path), SqliteStore(path)
    await first.migrate()
    try:
        _, one, one_fence = await claimed_turn(first)
        _, two, two_fence = await claimed_turn(second)
        await first.record_usage(one, one_fence, Usage(iterations=1), made := charge(400))
        assert made.total == Day(400, 0.0)
        await second.publish(two, two_fence, running(2), seen := charge(0))
        assert seen.total == Day(400, 0.0), "the other process's charge, read"
        await second.record_usage(two, two_fence, Usage(iterations=1), more := charge(300))
        assert more.total == Day(700, 0.0)
        await first.publish(one, one_fence, running(2), again := charge(0))
        assert again.total == Day(700, 0.0), "what it kept was forgotten when the file moved"
        assert (await first.ledger("ada", "2026-12-02")).day == Day(700, 0.0)
    finally:
        await first.close()
        await second.close()


async def test_a_batch_rolled_back_charges_each_of_its_writes_once(tmp_path: Path) -> None:
    """A refused write in a batch rolls the batch back and its writes are made again one
    by one: the ones that stand charge the day once, the refused one not at all."""
    store = SqliteStore(tmp_path / "batch.db")
    await store.migrate()
    try:
        _, one, one_fence = await claimed_turn(store)
        _, two, two_fence = await claimed_turn(store)
        commits = store.commits.commits
        made = charge(400)
        answers = await asyncio.gather(
            store.record_usage(one, one_fence, Usage(iterations=1), made),
            store.publish(two, two_fence + 1, running(2), charge(300)),  # raises in the batch
            return_exceptions=True,
        )
        assert answers[0] is None
        assert isinstance(answers[1], FenceLost)
        assert store.commits.commits == commits + 1, "the batch was rolled back"
        assert made.total == Day(400, 0.0)
        assert (await store.ledger("ada", "2026-12-02")).day == Day(400, 0.0)
        await store.publish(two, two_fence, running(2), read := charge(0))
        assert read.total == Day(400, 0.0), "and what the database thread keeps says so"
    finally:
        await store.close()


async def test_a_day_the_ledger_never_charged_is_read_from_the_subjects_turns(
    store: Store,
) -> None:
    """Issue 44: an assistant without limits charges no ledger, yet `GET /api/usage` and
    `turnkeeper usage` show what its users' turns of the day billed."""
    conversation_id = await store.create_conversation(new_token()[1], owner="ada")
    turn_id = (await store.create_turn(conversation_id, "hi", user="ada")).turn_id
    fence = await store.claim(turn_id, 30, "anthropic")
    assert fence is not None
    usage = Usage(iterations=1, input_tokens=400, output_tokens=50, cost_usd=0.002)
    await store.record_usage(turn_id, fence, usage)
    day = today()
    kept = await store.ledger("ada", day)
    assert (kept.day.tokens, round(kept.day.cost_usd, 6)) == (450, 0.002)
    assert len(kept.recent) == 1, "the minute's turns as before"
    assert (await store.ledger("bob", day)).day == Day(), "bob's turns are his own"
    assert (await store.ledger(None, day)).day == Day(), "and no one else's"
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    assert (await store.ledger("ada", yesterday)).day == Day(), "asked today, not yesterday"
    await store.record_usage(turn_id, fence, usage, Charge("ada", day, 10, 0.0))
    kept = await store.ledger("ada", day)
    assert kept.day.tokens == 10, "a day the ledger charged is the ledger's (limits set)"
