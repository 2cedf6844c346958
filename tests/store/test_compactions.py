"""A conversation's compaction records (issue 30), on SQLite and on PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.store.test_contract import claimed_turn, running, write

from turnkeeper.store import FenceLost, Store
from turnkeeper.store.records import Compacted

QUESTION = {"role": "user", "content": "hi"}
ANSWER = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}


async def test_a_conversation_never_compacted_has_its_history_and_no_record(
    store: Store,
) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    await store.checkpoint(turn_id, fence, write([QUESTION, ANSWER], running(2)))
    assert await store.context(conversation_id) == ([QUESTION, ANSWER], None)


async def test_the_newest_record_is_read_with_the_whole_history(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    first = Compacted(reach=0, cleared=1)
    newest = Compacted(reach=2, cleared=2, summary="The user said hi.", turns=1)
    await store.checkpoint(turn_id, fence, replace(write([QUESTION], running(2)), compacted=first))
    cp = replace(write([ANSWER, QUESTION], running(3), n=2), compacted=newest)
    await store.checkpoint(turn_id, fence, cp)
    history, record = await store.context(conversation_id)
    assert history == [QUESTION, ANSWER, QUESTION], "the verbatim history, whole"
    assert record == newest
    assert await store.history(conversation_id) == history


async def test_a_refused_write_keeps_no_record(store: Store) -> None:
    conversation_id, turn_id, fence = await claimed_turn(store)
    record = Compacted(reach=1, cleared=1, summary="s", turns=1)
    with pytest.raises(FenceLost):
        await store.checkpoint(
            turn_id, fence + 1, replace(write([QUESTION], running(2)), compacted=record)
        )
    assert await store.context(conversation_id) == ([], None)


def test_a_record_reads_back_what_it_wrote_and_nothing_malformed() -> None:
    record = Compacted(reach=4, cleared=6, summary="notes", turns=2, window=6000)
    assert Compacted.from_json(record.to_json()) == record
    assert Compacted.from_json({"reach": -1, "cleared": "x", "summary": 3}) == Compacted()
    assert Compacted.from_json(None) == Compacted()
