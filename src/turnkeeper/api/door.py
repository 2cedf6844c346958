"""The limits at the API's door (docs/design.md §13): a new turn is let in or refused.

A turn asked over `turns_per_minute`, or by a user whose day is used up, answers `429`
before anything is queued: its `Retry-After` in whole seconds (until the minute's window
frees, or the next UTC midnight), and a JSON error with the limit's message `key` and its
text in the reader's language. `GET /api/usage` shows the caller the same ledger.
"""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..i18n import Catalogs
from ..store import Store
from ..usage import (
    MINUTE,
    Limits,
    LimitsSetting,
    limits_for,
    refused,
    today,
)
from .errors import ApiError

NO_USAGE = "Usage is shown only to signed-in users; this assistant has no sign-in."


class Door:
    """Lets a new turn in, or refuses it with `429`, by the limits of whoever asks."""

    def __init__(self, store: Store, limits: LimitsSetting, catalogs: Catalogs) -> None:
        self.store = store
        self.limits = limits
        self.catalogs = catalogs

    async def admit(self, user: str | None, locale: str) -> None:
        """Nothing without limits (no read of the store); else `ApiError(429)` if the
        minute is full or the day used up, saying so in `locale`."""
        limits = limits_for(self.limits, user)
        if limits is None or (limits.turns_per_minute is None and not limits.daily):
            return
        refusal = refused(limits, await self.store.ledger(user, today(), MINUTE))
        if refusal is None:
            return
        key, seconds = refusal
        raise ApiError(
            429,
            self.catalogs.resolve(key, locale) or key,
            fields={"key": key, "retry_after": seconds},
            headers={"retry-after": str(seconds)},
        )

    async def usage(self, request: Request, user: str | None) -> Response:
        """`GET /api/usage`: the signed-in caller's usage today and their limits."""
        if user is None:
            raise ApiError(404, NO_USAGE)
        now = datetime.now(UTC)
        kept = await self.store.ledger(user, today(now), MINUTE)
        return JSONResponse(kept.to_json(limits_for(self.limits, user) or Limits(), now))
