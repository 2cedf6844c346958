"""Who opens a turn, remembered for the poll: the turn's conversation and that
conversation's guard (the hash of its token, and the user who owns it, if one does),
read together (`Store.turn_guard`).

Both are the turn's for as long as the turn exists: a turn belongs to one conversation,
whose guard is fixed when its row is created, and the turn's row is deleted with the
conversation's. So once read they can be kept by turn, and a poll costs the API one
store read (the state's) instead of two. Keeping them needs no news of a delete: a
turn deleted since, by this process or another, is found by no read, and the poll's
own read answers `404` (`Store.poll` raises `NoTurn`). Nothing is kept by conversation:
a conversation's id can be deleted and created again (the protocols' ids are the
client's), so every other request reads the guard it needs from the store.

Only found turns are kept (an unknown id is asked of the store every time), at most
`size`, the oldest dropped first.
"""

from __future__ import annotations

from ..store import Store
from ..store.records import Guard

DEFAULT_SIZE = 100_000

Owned = tuple[str, Guard]
"""A turn's conversation and its guard."""


class Owners:
    """Each polled turn's conversation and guard, remembered (up to `size` turns): neither
    changes while the turn exists."""

    def __init__(self, store: Store, size: int = DEFAULT_SIZE) -> None:
        self.store = store
        self.size = size
        self._turns: dict[str, Owned] = {}

    async def of_turn(self, turn_id: str) -> Owned | None:
        """The turn's conversation and guard, or None if there is no such turn."""
        found = self._turns.get(turn_id)
        if found is None:
            found = await self.store.turn_guard(turn_id)
            if found is None:
                return None
            if len(self._turns) >= self.size:
                del self._turns[next(iter(self._turns))]
            self._turns[turn_id] = found
        return found

    def knows(self, turn_id: str) -> bool:
        """Whether the turn is remembered: a lookup of it reads nothing."""
        return turn_id in self._turns

    def forget(self, conversation_id: str) -> None:
        """A conversation this process deleted: its turns are no longer kept (memory only;
        a read of them would answer `404` all the same)."""
        for turn_id in [t for t, (c, _) in self._turns.items() if c == conversation_id]:
            del self._turns[turn_id]
