"""Who owns what, remembered: a turn's conversation, and a conversation's guard (the hash
of its token, and the user who owns it, if one does).

Both facts are fixed when the row is created and never change (until the
conversation is deleted: `forget()`, by the process that deleted it), so once read
they can be kept: a poll then costs the API one store read (the version
check) instead of three. Only found rows are kept (an unknown id is asked of
the store every time), and at most `size` of each, the oldest dropped first.
"""

from __future__ import annotations

from typing import TypeVar

from ..store import Store
from ..store.records import Guard

_V = TypeVar("_V")

DEFAULT_SIZE = 100_000


class Owners:
    """Which conversation a turn belongs to and what guards each conversation, remembered (up to
    `size` of each) since neither ever changes."""

    def __init__(self, store: Store, size: int = DEFAULT_SIZE) -> None:
        self.store = store
        self.size = size
        self._conversations: dict[str, str] = {}
        self._guards: dict[str, Guard] = {}

    async def conversation_of(self, turn_id: str) -> str | None:
        """The id of the turn's conversation, or None if there is no such turn."""
        found = self._conversations.get(turn_id)
        if found is None:
            turn = await self.store.turn(turn_id)
            if turn is None:
                return None
            found = self._keep(self._conversations, turn_id, turn.conversation_id)
        return found

    def knows(self, turn_id: str | None = None, conversation_id: str | None = None) -> bool:
        """Whether the turn's conversation (or the conversation's guard) is remembered: a
        lookup of it reads nothing."""
        if turn_id is not None:
            return turn_id in self._conversations
        return conversation_id in self._guards

    async def guard(self, conversation_id: str) -> Guard | None:
        """The conversation's token hash and owner, or None if there is no such conversation."""
        found = self._guards.get(conversation_id)
        if found is None:
            stored = await self.store.guard(conversation_id)
            if stored is None:
                return None
            found = self._keep(self._guards, conversation_id, stored)
        return found

    def forget(self, conversation_id: str) -> None:
        """A deleted conversation: neither it nor its turns are remembered."""
        self._guards.pop(conversation_id, None)
        for turn_id in [t for t, c in self._conversations.items() if c == conversation_id]:
            del self._conversations[turn_id]

    def _keep(self, kept: dict[str, _V], key: str, value: _V) -> _V:
        if len(kept) >= self.size:
            del kept[next(iter(kept))]
        kept[key] = value
        return value
