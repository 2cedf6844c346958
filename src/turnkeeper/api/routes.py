"""The HTTP API of ARCHITECTURE §6: start a turn, poll its state, cancel it, read the transcript.

Every `/api/*` call but `POST /api/conversations` needs the conversation's
bearer token; a wrong or missing one answers exactly as an unknown id does
(`404`), so ids cannot be probed.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..job import failed
from ..queue import Queue
from ..store import UNCLAIMED, Busy, Store, hash_token, new_token
from ..usage import Usage
from .errors import ApiError
from .owners import Owners

logger = logging.getLogger("turnkeeper.api")

NO_CONVERSATION = "No conversation has this id, or the token does not open it."
NO_TURN = "No turn has this id, or the token does not open it."
MAX_ID = 64


class Routes:
    def __init__(self, store: Store, queue: Queue) -> None:
        self.store = store
        self.queue = queue
        self.owners = Owners(store)

    async def create_conversation(self, request: Request) -> Response:
        token, token_hash = new_token()
        conversation_id = await self.store.create_conversation(token_hash)
        return JSONResponse({"conversation_id": conversation_id, "token": token}, 201)

    async def create_turn(self, request: Request) -> Response:
        conversation_id = await self._conversation(request)
        text = _question(await _json_body(request))
        try:
            turn = await self.store.create_turn(conversation_id, text)
        except Busy:
            raise ApiError(409, "This conversation has a turn that is not done yet.") from None
        try:
            await self.queue.enqueue(turn.turn_id)
        except Exception:
            logger.exception("turn %s could not be queued; finalising it as failed", turn.turn_id)
            await failed(self.store, turn.turn_id, UNCLAIMED)
            raise ApiError(503, "The turn could not be queued; try again later.") from None
        return JSONResponse({"turn_id": turn.turn_id}, 202)

    async def turn_state(self, request: Request) -> Response:
        turn_id = await self._turn(request)
        after = _after(_after_param(request))
        state = await self.store.state_after(turn_id, after)
        return Response(status_code=204) if state is None else JSONResponse(state)

    async def cancel(self, request: Request) -> Response:
        turn_id = await self._turn(request)
        await self.store.request_cancel(turn_id)
        return JSONResponse({"turn_id": turn_id}, 202)

    async def conversation(self, request: Request) -> Response:
        conversation_id = await self._conversation(request)
        messages = await self.store.transcript(conversation_id)
        usage = Usage()
        for turn in await self.store.usages(conversation_id):
            usage.add(turn)
        return JSONResponse(
            {"conversation_id": conversation_id, "messages": messages, "usage": usage.as_dict()}
        )

    # ---- auth ---------------------------------------------------------------

    async def _conversation(self, request: Request) -> str:
        conversation_id = request.path_params["conversation_id"]
        if not _plausible(conversation_id) or not await self._opens(request, conversation_id):
            raise ApiError(404, NO_CONVERSATION)
        return str(conversation_id)

    async def _turn(self, request: Request) -> str:
        turn_id = request.path_params["turn_id"]
        if not _plausible(turn_id):
            raise ApiError(404, NO_TURN)
        conversation_id = await self.owners.conversation_of(turn_id)
        if conversation_id is None or not await self._opens(request, conversation_id):
            raise ApiError(404, NO_TURN)
        return str(turn_id)

    async def _opens(self, request: Request, conversation_id: str) -> bool:
        """Whether the request's bearer token is the conversation's."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        expected = await self.owners.token_hash(conversation_id)
        return expected is not None and hmac.compare_digest(expected, hash_token(token.strip()))


def _plausible(an_id: str) -> bool:
    """Whether an id from a path could be one the store made; others are not looked up
    (PostgreSQL refuses a NUL in text, and a long id is only work)."""
    return len(an_id) <= MAX_ID and an_id.isascii() and an_id.isprintable()


async def _json_body(request: Request) -> Any:
    _require_json(request.headers.get("content-type"))
    body = await request.body()
    try:
        return json.loads(body)
    except RecursionError:
        raise ApiError(400, "The request body is nested too deeply.") from None
    except (UnicodeDecodeError, ValueError):
        # ValueError covers JSONDecodeError and integers too long to convert.
        raise ApiError(400, "The request body is not valid JSON.") from None


def _require_json(content_type: str | None) -> None:
    """A body declared as anything but JSON is refused; an undeclared one is read as JSON."""
    if content_type is None:
        return
    media_type = content_type.partition(";")[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise ApiError(415, "The request body must be sent as application/json.")


def _question(body: Any) -> str:
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str):
        raise ApiError(400, 'The body must be a JSON object with a string "text".')
    if not text.strip():
        raise ApiError(400, 'The "text" of a turn is empty.')
    if "\x00" in text:
        raise ApiError(400, 'The "text" of a turn may not contain a NUL character.')
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, 'The "text" of a turn is not valid Unicode text.') from None
    return text


def _after_param(request: Request) -> str | None:
    """`?after=`; the widget's own poll (`after=` digits and nothing else) without parsing
    the query string, the hottest request's largest share of the API's own work."""
    query: bytes = request.scope.get("query_string", b"")
    if query.startswith(b"after=") and query[6:].isdigit():
        return query[6:].decode("ascii")
    return request.query_params.get("after")


def _after(value: str | None) -> int:
    if value is None:
        return 0
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise ApiError(400, '"after" must be a whole number of zero or more.')
    return int(value)
