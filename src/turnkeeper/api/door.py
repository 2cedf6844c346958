"""The limits at the API's door (docs/design.md §13): a new turn is let in or refused.

A turn asked over `turns_per_minute`, or by a user whose day is used up, answers `429`,
decided in the transaction that would create it (`store/ledger.py`), and nothing is
queued: its `Retry-After` in whole seconds (until the minute's window
frees, or the next UTC midnight), and a JSON error with the limit's message `key` and its
text in the reader's language. `GET /api/usage` shows the caller the same ledger.
"""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..i18n import Catalogs
from ..store import OverLimit, Store
from ..store.records import Turn
from ..usage import MINUTE, Limits, LimitsSetting, limits_for, today
from .errors import ApiError

NO_USAGE = "Usage is shown only to signed-in users; this assistant has no sign-in."


class Door:
    """Lets a new turn in, or refuses it with `429`, by the limits of whoever asks."""

    def __init__(self, store: Store, limits: LimitsSetting, catalogs: Catalogs) -> None:
        self.store = store
        self.limits = limits
        self.catalogs = catalogs

    async def create_turn(
        self, conversation_id: str, question: str, *, user: str | None, locale: str
    ) -> Turn:
        """The store's new turn, held to the asker's limits in its own transaction (so
        concurrent requests of one user are counted one at a time): `ApiError(429)` saying
        so in `locale`, nothing created, if the minute is full or the day used up. Without
        limits, the store is asked nothing more."""
        limits = limits_for(self.limits, user)
        if limits is not None and limits.turns_per_minute is None and not limits.daily:
            limits = None
        try:
            return await self.store.create_turn(
                conversation_id, question, user=user, locale=locale, limits=limits
            )
        except OverLimit as over:
            raise ApiError(
                429,
                self.catalogs.resolve(over.key, locale) or over.key,
                fields={"key": over.key, "retry_after": over.retry_after},
                headers={"retry-after": str(over.retry_after)},
            ) from None

    async def usage(self, request: Request, user: str | None) -> Response:
        """`GET /api/usage`: the signed-in caller's usage today and their limits."""
        if user is None:
            raise ApiError(404, NO_USAGE)
        now = datetime.now(UTC)
        kept = await self.store.ledger(user, today(now), MINUTE)
        return JSONResponse(kept.to_json(limits_for(self.limits, user) or Limits(), now))
