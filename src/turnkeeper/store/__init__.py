"""The store: conversations, turns, published state, checkpoints, cancel flags, usage, leases.

One small protocol (`base.Store`), one SQL store behind it (`sql.py`: every call
written once, as programs of statements from `statements.py`), on two databases,
each a dialect (`dialect.py`) and an executor:

- `sqlite`: one file in WAL mode, the embedded default (`sqlite:///turnkeeper.db`);
  its calls run on a thread of their own, writes batched (`group_commit.py`).
- `postgres`: PostgreSQL through psycopg 3, shared by the API and any number of
  workers on other machines (`postgresql://USER@HOST:5432/DBNAME`); its calls run
  on a pool that waits out an outage for a turn's writes (`pooled.py`, `pool.py`).

A turn moves `queued` → `running` → one terminal status. A worker `claim`s it
with a lease and gets a **fence**, a counter that every later write must
present; `take_over` and `end_turn` (the sweeper, `lifecycle.fail()`) bump the fence, so a zombie
worker's writes are refused with `FenceLost` instead of overwriting a
finalised turn. Writes are proportional to what changed: a checkpoint appends
the new history messages, it never rewrites the history.

Imports only the ground floor's value types (`turnkeeper.state`, `wire`, `usage`,
`errors`, `credentials`) and `store.records`: loading the store loads no
provider and nothing of the loop's side.
"""

from __future__ import annotations

from .base import (
    EXPIRED,
    UNCLAIMED,
    WAITING,
    Holder,
    Store,
    hash_token,
    held_by,
    new_id,
    new_token,
)
from .refusals import Busy, FenceLost, NoConversation, NoTurn, OverLimit
from .url import DEFAULT_URL, StoreUrl, parse_url


async def open_store(url: str | None = None, *, read_only: bool = False) -> Store:
    """The store at `url` (default `sqlite:///turnkeeper.db`), migrated and ready; with
    `read_only`, as it is, to be read (not migrated: see `Store.pending()`; a SQLite file is
    opened read-only)."""
    parsed = parse_url(url or DEFAULT_URL)
    store: Store
    if parsed.scheme == "sqlite":
        from .sqlite import SqliteStore

        store = SqliteStore(parsed.target, read_only=read_only)
    else:
        from .postgres import PostgresStore

        store = await PostgresStore.connect(parsed.target)
    if not read_only:
        await store.migrate()
    return store


__all__ = [
    "DEFAULT_URL",
    "EXPIRED",
    "UNCLAIMED",
    "WAITING",
    "Busy",
    "FenceLost",
    "Holder",
    "NoConversation",
    "NoTurn",
    "OverLimit",
    "Store",
    "StoreUrl",
    "hash_token",
    "held_by",
    "new_id",
    "new_token",
    "open_store",
    "parse_url",
]
