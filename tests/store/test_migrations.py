"""Upgrading a store: what an earlier schema holds reads back whole, an unfinished turn
included."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

import psycopg
import pytest
from tests.scripts import assert_valid_history

from turnkeeper import state as published
from turnkeeper.state import PublishedState
from turnkeeper.store import (
    UNCLAIMED,
    Store,
    held_by,
    new_id,
    new_token,
    open_store,
    parse_url,
)
from turnkeeper.store.records import Guard
from turnkeeper.store.sqlite import NOW as SQLITE_NOW
from turnkeeper.turn.lifecycle import fail
from turnkeeper.usage import Usage
from turnkeeper.wire import Message

PREVIOUS = {"sqlite": 2, "postgresql": 4}
"""How many migrations the schema had while checkpoints were rows of their own."""
BEFORE_OWNERS = {"sqlite": 3, "postgresql": 6}
"""How many migrations the schema had before conversations had owners and turns askers."""

TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}


async def previous_store(
    store_url: str, monkeypatch: pytest.MonkeyPatch, previous: dict[str, int] = PREVIOUS
) -> Store:
    """A store migrated only as far as a previous schema (`previous`: its migration count
    in each dialect)."""
    parsed = parse_url(store_url)
    if parsed.scheme == "sqlite":
        from turnkeeper.store import sqlite as dialect
    else:
        from turnkeeper.store import postgres as dialect  # type: ignore[no-redef]
    with monkeypatch.context() as patched:
        patched.setattr(dialect, "MIGRATIONS", dialect.MIGRATIONS[: previous[parsed.scheme]])
        return await open_store(store_url)


def execute(store_url: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """Statements on a connection of their own, as the previous release ran them."""
    parsed = parse_url(store_url)
    if parsed.scheme == "sqlite":
        with closing(sqlite3.connect(parsed.target)) as db, db:
            db.executemany(sql, rows)
        return
    with psycopg.connect(parsed.target, autocommit=True) as pg:
        pg.cursor().executemany(sql.replace("?", "%s"), rows)


def created_before(store_url: str, token_hash: str, question: str) -> tuple[str, str]:
    """A previous release's `create_conversation` and `create_turn`, written as it wrote
    them (it knew no owners nor askers): the new conversation's id and its queued turn's."""
    conversation_id, turn_id = new_id("c"), new_id("t")
    now = SQLITE_NOW if parse_url(store_url).scheme == "sqlite" else "now()"
    execute(
        store_url,
        f"INSERT INTO conversations (conversation_id, token_hash, created) VALUES (?, ?, {now})",
        [(conversation_id, token_hash)],
    )
    first = published.queued(turn_id, conversation_id, question)
    execute(
        store_url,
        "INSERT INTO turns (turn_id, conversation_id, question, status, version, state,"
        f" n_messages, message_offset, usage, created) VALUES (?, ?, ?, 'queued', 1, ?, 1, 0, ?,"
        f" {now})",
        [
            (
                turn_id,
                conversation_id,
                question,
                json.dumps(first.bare()),
                json.dumps(first.usage.as_dict()),
            )
        ],
    )
    execute(
        store_url,
        "INSERT INTO bubbles VALUES (?, 0, ?)",
        [(turn_id, json.dumps(first.messages[0].to_json()))],
    )
    return conversation_id, turn_id


def has_table(store_url: str, name: str) -> bool:
    parsed = parse_url(store_url)
    if parsed.scheme == "sqlite":
        with closing(sqlite3.connect(parsed.target)) as db:
            sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
            return db.execute(sql, (name,)).fetchone() is not None
    with psycopg.connect(parsed.target) as pg:
        sql = "SELECT to_regclass(%s) IS NOT NULL"
        row = pg.execute(sql, (name,)).fetchone()
        return bool(row and row[0])


@dataclass
class Before:
    """A turn the previous release checkpointed once, after a call that asked for a tool."""

    conversation_id: str
    turn_id: str
    fence: int
    started: PublishedState
    checkpointed: PublishedState
    appended: list[Message]


async def checkpointed_before(old: Store, store_url: str, row: str) -> Before:
    """The previous release's checkpoint: the history, the `checkpoints` row, and the
    turn's row holding the same state (`row="behind"`: still the state published before,
    as a release that published after checkpointing left it when it died in between)."""
    conversation_id, turn_id = created_before(store_url, new_token()[1], "what's up?")
    # the previous release's claim (the current one reads columns it did not have)
    execute(
        store_url,
        "UPDATE turns SET status = 'running', fence = fence + 1, lease_expires = ?,"
        " wire = 'anthropic' WHERE turn_id = ?",
        [(time.time() + 30, turn_id)],
    )
    fence = 1
    queued = await old.state_after(turn_id, 0)
    assert queued is not None
    started = PublishedState.from_json(queued).running()
    state = started.iterated(activity=None, text="looking it up", usage=Usage(iterations=1))
    appended: list[Message] = [
        {"role": "user", "content": "what's up?"},
        {"role": "assistant", "content": [{"type": "text", "text": "looking it up"}, TOOL_USE]},
    ]
    execute(
        store_url,
        "INSERT INTO messages (conversation_id, turn_id, body) VALUES (?, ?, ?)",
        [(conversation_id, turn_id, json.dumps(m)) for m in appended],
    )
    execute(
        store_url,
        "INSERT INTO checkpoints VALUES (?, 1, ?, ?)",
        [(turn_id, json.dumps(state.bare()), len(state.messages))],
    )
    published_before(store_url, turn_id, state if row == "as checkpointed" else started)
    return Before(conversation_id, turn_id, fence, started, state, appended)


def published_before(store_url: str, turn_id: str, state: PublishedState) -> None:
    """The previous release's publish: the turn's row, and the bubbles past the question."""
    execute(
        store_url,
        "UPDATE turns SET state = ?, version = ?, status = ?, n_messages = ? WHERE turn_id = ?",
        [(json.dumps(state.bare()), state.version, state.status, len(state.messages), turn_id)],
    )
    execute(
        store_url,
        "INSERT INTO bubbles VALUES (?, ?, ?)",
        [
            (turn_id, n, json.dumps(state.messages[n].to_json()))
            for n in range(1, len(state.messages))
        ],
    )


@pytest.mark.parametrize("row", ["as checkpointed", "behind"])
async def test_a_turn_checkpointed_under_the_previous_schema_is_recovered_from_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch, row: str
) -> None:
    old = await previous_store(store_url, monkeypatch)
    try:
        before = await checkpointed_before(old, store_url, row)
        _, never_claimed = created_before(store_url, new_token()[1], "later")
    finally:
        await old.close()

    store = await open_store(store_url)  # the upgrade: the process applies what is missing
    try:
        recovery = await store.take_over(before.turn_id, held_by(before.fence))
        assert recovery is not None
        assert recovery.checkpointed, "the checkpoint carried over"
        # As the previous release recovered it: the checkpoint's state with the bubbles
        # stored (a turn's row left behind never stored the checkpoint's new bubble).
        bubbles = before.checkpointed if row == "as checkpointed" else before.started
        assert recovery.state == replace(before.checkpointed, messages=bubbles.messages)
        assert recovery.last_message == before.appended[-1]
        assert await fail(store, before.turn_id, held_by(recovery.fence), reporter=lambda r: None)
        history = await store.history(before.conversation_id)
        assert history[:2] == before.appended, "the question is not stored a second time"
        assert_valid_history(history)
        final = await store.state_after(before.turn_id, 0)
        assert final is not None
        assert (final["status"], final["done"], final["version"]) == ("failed", True, 4)

        unclaimed = await store.take_over(never_claimed, UNCLAIMED)
        assert unclaimed is not None
        assert not unclaimed.checkpointed
    finally:
        await store.close()
    assert not has_table(store_url, "checkpoints"), "the checkpoints table is gone"


async def test_conversations_and_turns_from_before_owners_read_back_unowned_and_in_english(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await previous_store(store_url, monkeypatch, BEFORE_OWNERS)
    token_hash = new_token()[1]
    try:
        conversation_id, turn_id = created_before(store_url, token_hash, "what's up?")
    finally:
        await old.close()

    store = await open_store(store_url)  # the upgrade: the process applies what is missing
    try:
        assert await store.guard(conversation_id) == Guard(token_hash, owner=None)
        turn = await store.turn(turn_id)
        assert turn is not None
        assert (turn.question, turn.user, turn.locale) == ("what's up?", None, "en")
        fence = await store.claim(turn_id, 30, "anthropic")
        assert fence is not None, "the old turn is claimed as before"

        owned = await store.create_conversation(new_token()[1], owner="u_1")
        asked = await store.create_turn(owned, "hallo?", user="u_1", locale="de")
        assert await store.turn(asked.turn_id) == asked
        [summary] = await store.conversations("u_1")
        assert (summary.conversation_id, summary.title) == (owned, "hallo?")
    finally:
        await store.close()


async def test_pending_counts_what_migrate_would_apply_and_applies_nothing(store_url: str) -> None:
    parsed = parse_url(store_url)
    if parsed.scheme == "sqlite":
        sqlite3.connect(parsed.target).close()  # an empty file, as any program leaves one
    untouched = await open_store(store_url, read_only=True)
    try:
        assert await untouched.pending() is None  # no turnkeeper store here yet
        assert await untouched.pending() is None  # and asking made none
    finally:
        await untouched.close()
    await (await open_store(store_url)).close()  # migrated
    migrated = await open_store(store_url, read_only=True)
    try:
        assert await migrated.pending() == 0
    finally:
        await migrated.close()


BEFORE_BY_NAME = {"sqlite": 10, "postgresql": 13}
"""How many migrations the schema had while turns were queued by their fingerprint."""


@pytest.mark.postgres
async def test_jobs_waiting_on_a_fingerprints_queue_move_to_their_assistants_name(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.databases import fresh_schema

    with fresh_schema(postgres_database) as url:
        await jobs_moved(url, monkeypatch)


async def jobs_moved(postgres_store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job deferred on its turn's fingerprint's queue, then the upgrade: on its name's."""
    from turnkeeper.service.ownership import queue_of
    from turnkeeper.service.worker import TASK
    from turnkeeper.store.records import Owner

    owner = Owner("Bakery", "0123456789ab")
    old = await previous_store(postgres_store_url, monkeypatch, BEFORE_BY_NAME)
    try:
        conversation_id = await old.create_conversation(new_token()[1])
        turn = await old.create_turn(conversation_id, "when do you open?", owner=owner)
    finally:
        await old.close()
    target = parse_url(postgres_store_url).target
    with psycopg.connect(target, autocommit=True) as pg:
        pg.execute(
            "INSERT INTO procrastinate_jobs (queue_name, task_name, args, queueing_lock)"
            " VALUES (%s, %s, %s, %s)",
            (f"turnkeeper_turns.{owner.version}", TASK, json.dumps({"turn_id": turn.turn_id}),
             turn.turn_id),
        )  # fmt: skip
    await (await open_store(postgres_store_url)).close()  # the upgrade
    with psycopg.connect(target, autocommit=True) as pg:
        row = pg.execute("SELECT queue_name FROM procrastinate_jobs").fetchone()
    assert row == (queue_of(owner),)
