"""The store: conversations, turns, published state, checkpoints, cancel flags, usage, leases.

One small protocol, two implementations behind it:

- `sqlite`: one file in WAL mode, the embedded default (`sqlite:///turnkeeper.db`).
- `postgres`: PostgreSQL through psycopg 3, shared by the API and any number of
  workers on other machines (`postgresql://user@host:port/dbname`).

A turn moves `queued` → `running` → one terminal status. A worker `claim`s it
with a lease and gets a **fence**, a counter that every later write must
present; `take_over` (the sweeper, or `failed()`) bumps the fence, so a zombie
worker's writes are refused with `FenceLost` instead of overwriting a
finalised turn. Writes are proportional to what changed: a checkpoint appends
the new history messages, it never rewrites the history.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import TurnError
from ..usage import Usage
from ..wire import Message
from .url import DEFAULT_URL, StoreUrl, parse_url


class FenceLost(TurnError):
    """A write presented a fence the turn no longer has: another party finalised it."""


class Busy(TurnError):
    """The conversation already has a turn that is not done."""


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn as the store holds it."""

    turn_id: str
    conversation_id: str
    question: str
    version: int
    """The last version published."""
    message_offset: int
    """How many published messages the conversation's earlier turns hold."""
    done: bool


@dataclass(frozen=True, slots=True)
class Recovery:
    """What `take_over` hands to `failed()`: the last checkpoint and what came after it."""

    turn_id: str
    conversation_id: str
    fence: int
    question: str
    wire: str | None
    """The wire format the worker's provider wrote the history in (None if never claimed)."""
    version: int
    """The highest version published or checkpointed."""
    message_offset: int
    state: dict[str, Any]
    """The state of the last checkpoint, or the last published state if there is none."""
    checkpointed: bool
    last_message: Message | None
    """The last history message this turn stored, if any."""
    usage: Usage = field(default_factory=Usage)
    """Usage as last recorded (after the last model call that returned)."""


class Store(Protocol):
    """Everything a turn, its job, the sweeper and the HTTP API keep."""

    async def migrate(self) -> None:
        """Apply the numbered migrations not yet recorded in the database, in order."""

    async def close(self) -> None: ...

    # ---- the API's side ----------------------------------------------------

    async def create_conversation(self, token_hash: str) -> str:
        """A new conversation guarded by the token with this hash; its id."""
        ...

    async def token_hash(self, conversation_id: str) -> str | None: ...

    async def create_turn(self, conversation_id: str, question: str) -> Turn:
        """Queue a turn (version 1, `queued`); `Busy` while the conversation has one not done."""
        ...

    async def turn(self, turn_id: str) -> Turn | None: ...

    async def state_after(self, turn_id: str, after: int) -> dict[str, Any] | None:
        """The published state if its version is above `after`, else None."""
        ...

    async def transcript(self, conversation_id: str) -> list[dict[str, Any]]:
        """Every turn's published messages, oldest first."""
        ...

    async def request_cancel(self, turn_id: str) -> None: ...

    async def counts(self) -> dict[str, int]:
        """How many turns are in each status."""
        ...

    # ---- the worker's side -------------------------------------------------

    async def history(self, conversation_id: str) -> list[Message]:
        """The conversation's history in its wire format, oldest first."""
        ...

    async def queued(self) -> list[str]:
        """Turns waiting to be claimed, oldest first."""
        ...

    async def claim(self, turn_id: str, lease: float, wire: str) -> int | None:
        """Move a queued turn to running under a lease; its fence, or None if not queued."""
        ...

    async def renew(self, turn_id: str, fence: int, lease: float) -> bool: ...

    async def cancel_requested(self, turn_id: str) -> bool: ...

    async def record_usage(self, turn_id: str, fence: int, usage: Usage) -> None: ...

    async def publish(self, turn_id: str, fence: int, state: dict[str, Any]) -> None: ...

    async def checkpoint(
        self,
        turn_id: str,
        fence: int,
        iteration: int,
        appended: Sequence[Message],
        state: dict[str, Any],
    ) -> None:
        """Append the new history messages and keep the checkpoint, in one transaction."""
        ...

    async def finish(
        self,
        turn_id: str,
        fence: int,
        appended: Sequence[Message],
        state: dict[str, Any],
        usage: Usage,
    ) -> None:
        """The one final write: history tail, final state, usage; clears the turn's keys."""
        ...

    # ---- the sweeper's side ------------------------------------------------

    async def expired(self) -> list[str]:
        """Running turns whose lease has expired."""
        ...

    async def take_over(
        self, turn_id: str, fence: int | None = None, lease: float = 30.0
    ) -> Recovery | None:
        """Bump the fence of a turn to finalise it: of an expired lease (`fence=None`) or
        of the holder of `fence`. None if the turn is done or not in that position.

        The new holder gets `lease` seconds; if it dies too, the sweeper tries again."""
        ...


def new_token() -> tuple[str, str]:
    """A bearer token and the hash the store keeps of it."""
    token = secrets.token_urlsafe(32)
    return token, hash_token(token)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


async def open_store(url: str | None = None) -> Store:
    """The store at `url` (default `sqlite:///turnkeeper.db`), migrated and ready."""
    parsed = parse_url(url or DEFAULT_URL)
    store: Store
    if parsed.scheme == "sqlite":
        from .sqlite import SqliteStore

        store = SqliteStore(parsed.target)
    else:
        from .postgres import PostgresStore

        store = await PostgresStore.connect(parsed.target)
    await store.migrate()
    return store


__all__ = [
    "DEFAULT_URL",
    "Busy",
    "FenceLost",
    "Recovery",
    "Store",
    "StoreUrl",
    "Turn",
    "hash_token",
    "new_id",
    "new_token",
    "open_store",
    "parse_url",
]
