"""Every statement of the one SQL store, written once, in templates both dialects read.

A template is written with `?` placeholders and the dialect's `{word}`s (see
`Dialect.words`); `compiled(dialect)` gives them in that dialect's text, once per
dialect. Booleans are compared with `= {false}` / `= {true}`: SQLite keeps them as
integers, and its partial indexes (`WHERE done = 0`) are matched by that form.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from . import ledger
from .dialect import Dialect

OWNED_BY = "COALESCE(assistant, ?, '') = COALESCE(?, assistant, '')"
"""The turn is the assistant's whose name is given twice: true for a turn that records
none, and when none is given. (Its version, in the `fingerprint` column, claims nothing.)"""


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements; the defaults are the templates."""

    # ---- migrations
    migrations_table: str = (
        "CREATE TABLE IF NOT EXISTS turnkeeper_migrations"
        " (number integer PRIMARY KEY, name text NOT NULL, applied {time} NOT NULL)"
    )
    migrations_done: str = "SELECT number FROM turnkeeper_migrations"
    migrated: str = (
        "INSERT INTO turnkeeper_migrations (number, name, applied) VALUES (?, ?, {stamp})"
    )
    has_migrations: str = "{has_migrations}"
    migrations_count: str = "SELECT count(*) FROM turnkeeper_migrations"

    # ---- the API's side
    create_conversation: str = (
        "INSERT INTO conversations (conversation_id, token_hash, owner, created)"
        " VALUES (?, ?, ?, {stamp}) ON CONFLICT (conversation_id) DO NOTHING"
    )
    guard: str = "SELECT token_hash, owner FROM conversations WHERE conversation_id = ?"
    conversations: str = (
        "SELECT c.conversation_id, {created}, COALESCE(c.title, (SELECT t.question FROM turns t"
        " WHERE t.conversation_id = c.conversation_id ORDER BY t.seq LIMIT 1))"
        " FROM conversations c WHERE c.owner = ? ORDER BY c.created DESC, {inserted} DESC LIMIT ?"
    )
    offset: str = (
        "SELECT (SELECT COALESCE(SUM(t.n_messages), 0) FROM turns t"
        " WHERE t.conversation_id = c.conversation_id)"
        " FROM conversations c WHERE c.conversation_id = ?{key_share}"
    )
    """A new turn's first message's number, or no row when the conversation is gone; on
    PostgreSQL the row is held against a delete until the turn is committed (the lock its
    foreign key takes, taken first), and a delete committed meanwhile finds it gone."""
    create_turn: str = (
        "INSERT INTO turns (turn_id, conversation_id, question, status, version, state,"
        " n_messages, message_offset, usage, asked_by, locale, assistant, fingerprint, fate,"
        " approval_timeout, created)"
        " VALUES (?, ?, ?, 'queued', 1, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, {stamp})"
    )
    first_bubble: str = "INSERT INTO bubbles (turn_id, n, body) VALUES (?, 0, ?)"
    turn_guard: str = (
        "SELECT t.conversation_id, c.token_hash, c.owner FROM turns t"
        " JOIN conversations c ON c.conversation_id = t.conversation_id WHERE t.turn_id = ?"
    )
    turn: str = (
        "SELECT turn_id, conversation_id, question, version, message_offset, done, asked_by,"
        " locale, assistant, fingerprint, fate FROM turns WHERE turn_id = ?"
    )
    owners: str = (
        "SELECT assistant, fingerprint, COUNT(*) FROM turns WHERE status = 'queued'"
        " AND done = {false} AND fingerprint IS NOT NULL GROUP BY assistant, fingerprint"
        " ORDER BY COUNT(*) DESC, assistant, fingerprint"
    )
    open_turn: str = "SELECT turn_id FROM turns WHERE conversation_id = ? AND done = {false}"
    start: str = (
        "SELECT turn_id, conversation_id, question, version, message_offset, done, asked_by,"
        " locale, state, n_messages, assistant, fingerprint, fate FROM turns WHERE turn_id = ?"
    )
    state_after: str = (
        "SELECT version, CASE WHEN version > ? THEN state END, n_messages FROM turns"
        " WHERE turn_id = ?"
    )
    """The turn's version, and its state only if that is above the one asked after."""
    bubbles: str = "SELECT body FROM bubbles WHERE turn_id = ? AND n < ? ORDER BY n"
    paged: str = (
        "SELECT i, body, turn_id, feedback FROM (SELECT b.body, t.turn_id, t.feedback,"
        " row_number() OVER (ORDER BY t.seq, b.n) - 1 AS i,"
        " count(*) OVER () AS total FROM turns t JOIN bubbles b ON b.turn_id = t.turn_id"
        " WHERE t.conversation_id = ? AND b.n < t.n_messages) m"
        " WHERE i < COALESCE(?, total) AND i >= {least}(COALESCE(?, total), total) - ?"
        " ORDER BY i"
    )
    """A page of a transcript in one statement, each message with its turn's id and feedback
    (what the reader rated it): parameters conversation, before, before, limit."""
    usages: str = "SELECT usage FROM turns WHERE conversation_id = ? ORDER BY seq"
    request_cancel: str = (
        "{notify_from}UPDATE turns SET cancel = {true} WHERE turn_id = ? AND done = {false}{notify}"
    )
    """The flag set; on PostgreSQL, in the same statement, every process told (NOTIFY)."""
    counts: str = "SELECT status, COUNT(*) FROM turns GROUP BY status"

    # ---- the worker's side
    history: str = "SELECT body FROM messages WHERE conversation_id = ? ORDER BY seq"
    queued: str = (
        "SELECT turn_id FROM turns WHERE status = 'queued'"
        " AND COALESCE(requeued, created) <= {ago} AND " + OWNED_BY + " ORDER BY seq"
    )
    unclaimed: str = (
        "SELECT turn_id, assistant, COALESCE(requeued, created) <= {ago} FROM turns t"
        " WHERE status = 'queued' AND done = {false} AND COALESCE(requeued, created) <= {ago}"
        " AND " + OWNED_BY + " AND NOT EXISTS (SELECT 1 FROM turns r WHERE r.status = 'running'"
        " AND r.done = {false} AND COALESCE(r.assistant, '') = COALESCE(t.assistant, ''))"
        " ORDER BY seq"
    )
    """The queued turns that waited longer than `?` seconds (the timeout: the third column
    says whether longer than the first `?`) while no turn of their assistant runs: no
    worker of it is busy, so none is there."""
    unclaimed_state: str = (
        "SELECT version, state FROM turns WHERE turn_id = ? AND status = 'queued'"
        " AND done = {false}{lock}"
    )
    unclaimed_shown: str = (
        "UPDATE turns SET state = ?, version = ? WHERE turn_id = ? AND version = ?"
        " AND status = 'queued' AND done = {false}"
    )
    claim: str = (
        "UPDATE turns SET status = 'running', fence = fence + 1, lease_expires = {now} + ?,"
        " wire = ? WHERE turn_id = ? AND status = 'queued' AND done = {false}"
        " AND " + OWNED_BY + " RETURNING fence"
    )
    renew: str = (
        "UPDATE turns SET lease_expires = {now} + ?"
        " WHERE turn_id = ? AND fence = ? AND done = {false}"
    )
    cancel_requested: str = "SELECT cancel FROM turns WHERE turn_id = ?"
    record_usage: str = ledger.RECORD_USAGE
    iterations: str = "SELECT record FROM iterations WHERE turn_id = ? ORDER BY n"

    # ---- the sweeper's side
    expired: str = (
        "SELECT turn_id FROM turns WHERE status = 'running' AND done = {false}"
        " AND lease_expires < {now} ORDER BY lease_expires"
    )
    take_over: str = (
        "UPDATE turns SET fence = fence + 1, lease_expires = {now} + ?"
        " WHERE turn_id = ? AND done = {false} AND {{condition}}"
        " RETURNING fence, conversation_id, question, wire, version, message_offset, state,"
        " usage, n_messages, checkpointed"
    )
    """`{condition}` is the holder's (`Holder.condition`)."""
    resume_and_cancel: str = "SELECT resume, cancel FROM turns WHERE turn_id = ?"
    last_message: str = "SELECT body FROM messages WHERE turn_id = ? ORDER BY seq DESC LIMIT 1"

    # ---- waiting and resuming
    park: str = (
        "UPDATE turns SET resume = ?, waiting_since = {stamp}"
        " WHERE turn_id = ? AND fence = ? AND done = {false}"
    )
    resume_record: str = "SELECT resume FROM turns WHERE turn_id = ?"
    waiting_turn: str = (
        "SELECT resume, state, n_messages FROM turns WHERE turn_id = ? AND status = 'waiting'"
        " AND done = {false}{lock}"
    )
    decided: str = (
        "UPDATE turns SET resume = ?, state = ?, version = ?, status = ?, n_messages = ?,"
        " requeued = CASE WHEN ? = 'queued' THEN {stamp} ELSE requeued END WHERE turn_id = ?"
    )
    decision_bubble: str = "INSERT INTO bubbles (turn_id, n, body) VALUES (?, ?, ?)"
    """The reader's decision, kept in the transcript (`state.Decided`)."""
    requeued: str = (
        "UPDATE turns SET resume = ?, requeued = {stamp}, lease_expires = NULL"
        " WHERE turn_id = ? AND fence = ? AND done = {false}"
    )
    waiting: str = (
        "SELECT turn_id FROM turns WHERE status = 'waiting' AND done = {false}"
        " AND {waited} >= COALESCE(approval_timeout, ?) ORDER BY waiting_since"
    )
    """The turns that waited longer than their own approval timeout (else the one given)."""

    # ---- the event log (events.py)
    last_event: str = "SELECT COALESCE(MAX(seq), 0) FROM turn_events WHERE turn_id = ?"
    add_event: str = "INSERT INTO turn_events (turn_id, seq, type, body) VALUES (?, ?, ?, ?)"
    events_woken: str = "{notify_events}"
    """On PostgreSQL, every process's readers told (NOTIFY, sent at commit); else nothing."""
    dropped: str = (
        "DELETE FROM turn_events WHERE turn_id = ? AND type = 'text.delta' AND {message} = ?"
    )
    """The text deltas streamed into a bubble whose answer was refused (`events.DROPPED`)."""
    held: str = "SELECT 1 FROM turns WHERE turn_id = ? AND fence = ?{lock}"
    events_after: str = (
        "SELECT seq, type, body FROM (SELECT seq, type, body,"
        " SUM(body_bytes) OVER (ORDER BY seq) - body_bytes AS bytes_before"
        " FROM (SELECT seq, type, body, {body_size} AS body_bytes FROM turn_events"
        " WHERE turn_id = ? AND seq > ? ORDER BY seq LIMIT ?) AS page) AS sized"
        " WHERE bytes_before < ? ORDER BY seq"
    )
    """At most `?` events, and no more once `?` bytes of bodies came before (the first
    always comes): a page's memory is bounded however large the events are."""
    streamed: str = (
        "SELECT seq, type, body FROM turn_events WHERE turn_id = ?"
        " AND type IN ('text.delta', 'text.retracted') ORDER BY seq"
    )
    """The text a turn streamed and withdrew, for `events.unsettled` when it is ended."""
    forget_events: str = (
        "DELETE FROM turn_events WHERE turn_id IN (SELECT turn_id FROM turn_events"
        " WHERE type = 'turn.ended' AND at < {now} - ?)"
    )
    """The events of the turns that ended more than `?` seconds ago."""

    # ---- the ledger (ledger.py)
    ledger_day: str = ledger.DAY
    recent_of: str = ledger.RECENT_OF
    recent: str = ledger.RECENT
    used_of: str = ledger.USED_OF
    used: str = ledger.USED
    record_and_add: str = ledger.RECORD_AND_ADD
    record_and_read: str = ledger.RECORD_AND_READ


def compiled(dialect: Dialect) -> Statements:
    """The statements in `dialect`'s text."""
    templates = Statements()
    return Statements(
        **{f.name: dialect.sql(getattr(templates, f.name)) for f in fields(Statements)}
    )
