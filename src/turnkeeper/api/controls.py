"""What a reader controls of their own conversations, over HTTP (docs/design.md §6):
`DELETE` and `PATCH /api/conversations/{id}`, and `POST /api/turns/{id}/feedback`.

Whoever may open a conversation (its owner, or its token's holder) may delete or
rename it and rate its answers; anyone else gets the `404` of an unknown id, as
everywhere in the API. Deleting is a privacy duty: everything of the conversation
goes in one transaction (store/controls.py), and a turn still running is stopped
first only when the caller says so (`?stop=1`), else `409` names it.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..observe.metrics import Metrics
from ..store import Busy, NoConversation
from ..store.controlled import RATINGS, Rating
from ..turn.lifecycle import stop_waiting
from .errors import ApiError
from .routes import NO_CONVERSATION, _json_body

if TYPE_CHECKING:
    from .routes import Routes

RUNNING = (
    "This conversation has a turn that is not done; delete it with ?stop=1 to stop that turn first."
)
NOT_DONE = "This turn is not done yet; rate its answer once it is."
MAX_TITLE = 200
MAX_COMMENT = 2000


class Controls:
    """Delete, rename and rate, over the API's own `Routes` (who opens what, the store)."""

    def __init__(self, routes: Routes, metrics: Metrics) -> None:
        self.routes = routes
        self.store = routes.store
        self.metrics = metrics

    def endpoints(self) -> list[Route]:
        return [
            Route("/api/conversations/{conversation_id}", self.change, methods=["DELETE", "PATCH"]),
            Route("/api/turns/{turn_id}/feedback", self.feedback, methods=["POST"]),
        ]

    async def change(self, request: Request) -> Response:
        """`DELETE`: the conversation and everything of it; `PATCH {"title"}`: renamed."""
        routes = self.routes
        conversation_id = await routes._conversation(request, await routes._user(request))
        if request.method == "PATCH":
            try:
                title = await self.store.rename_conversation(
                    conversation_id, _title(await _json_body(request))
                )
            except NoConversation:  # deleted meanwhile
                raise ApiError(404, NO_CONVERSATION) from None
            return JSONResponse({"conversation_id": conversation_id, "title": title})
        return await self._delete(conversation_id, _stop(request.query_params.get("stop")))

    async def _delete(self, conversation_id: str, stop: bool) -> Response:
        running = await self.store.open_turn(conversation_id)
        if running is not None and not stop:
            return JSONResponse({"error": RUNNING, "turn_id": running}, 409)
        if running is not None:
            await self.store.request_cancel(running)
            await stop_waiting(self.store, running)
        try:
            deleted = await self.store.delete_conversation(conversation_id, stop=stop)
        except Busy:  # a turn was queued meanwhile
            running = await self.store.open_turn(conversation_id)
            return JSONResponse({"error": RUNNING, "turn_id": running}, 409)
        self.routes.owners.forget(conversation_id)
        if not deleted:
            raise ApiError(404, NO_CONVERSATION)
        return Response(status_code=204)

    async def feedback(self, request: Request) -> Response:
        """The reader's rating of a done turn's answer (`up` or `down`, and a comment),
        over any they gave it before."""
        turn_id = await self.routes._turn(request, await self.routes._user(request))
        rating, comment = _rated(await _json_body(request))
        given = await self.store.give_feedback(turn_id, rating, comment)
        if given is None:
            await self.routes.found(turn_id)
            raise ApiError(409, NOT_DONE)
        self.metrics.feedback.labels(rating, given.outcome, given.model or "unknown").inc()
        return JSONResponse({"turn_id": turn_id, "rating": rating, "comment": comment})


def _broken(text: str) -> bool:
    """Whether `text` holds a lone surrogate (no store can keep it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _stop(value: str | None) -> bool:
    if value in (None, "0", "false"):
        return False
    if value in ("1", "true"):
        return True
    raise ApiError(400, '"stop" must be 1 or 0.')


def _title(body: Any) -> str | None:
    """A new title: one line of text (control characters and runs of spaces become one
    space), at most MAX_TITLE characters as sent; or null for the first question again."""
    if not isinstance(body, dict) or "title" not in body:
        raise ApiError(400, 'The body must be a JSON object with a "title".')
    title = body["title"]
    if title is None:
        return None
    if not isinstance(title, str) or len(title) > MAX_TITLE:
        raise ApiError(400, f'"title" must be a string of at most {MAX_TITLE} characters, or null.')
    spaced = "".join(" " if unicodedata.category(c) == "Cc" else c for c in title)
    one_line = " ".join(spaced.split())
    if not one_line:
        raise ApiError(400, '"title" must not be blank.')
    try:
        one_line.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, '"title" is not valid Unicode text.') from None
    return one_line


def _rated(body: Any) -> tuple[Rating, str | None]:
    """The rating (`up` or `down`) and the comment (a string or null; empty is null)."""
    if not isinstance(body, dict):
        raise ApiError(400, 'The body must be a JSON object with a "rating".')
    rating, comment = body.get("rating"), body.get("comment")
    if rating not in RATINGS:
        raise ApiError(400, '"rating" must be "up" or "down".')
    if comment is not None and not isinstance(comment, str):
        raise ApiError(400, '"comment" must be a string, or null.')
    if comment is not None and (
        len(comment) > MAX_COMMENT or "\x00" in comment or _broken(comment)
    ):
        raise ApiError(400, f'"comment" must be text of at most {MAX_COMMENT} characters.')
    return ("up" if rating == "up" else "down"), (comment or None)
