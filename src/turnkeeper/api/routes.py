"""The HTTP API (docs/design.md §6): start a turn, poll its state, cancel it,
decide on a tool call it waits for, read the transcript, list one's conversations.

Who may open a conversation is decided one of two ways:

- tokens (the default): every `/api/*` call but `POST /api/conversations` needs the
  conversation's bearer token;
- users, with `authenticate`: every `/api/*` call needs a signed-in user (`401`
  without one), and a conversation is opened only by the user who started it.

Either way, a conversation or turn the caller may not open answers exactly as an
unknown id does (`404`), so ids cannot be probed.
"""

from __future__ import annotations

import hmac
import inspect
import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import ConfigError
from ..i18n import Catalogs, accepted, locale_tag
from ..outcomes import Status
from ..service.queue import Queue
from ..store import UNCLAIMED, Busy, NoConversation, NoTurn, Store, hash_token, new_token
from ..store.records import Fate, Guard, Owner
from ..turn.lifecycle import fail, stop_waiting
from ..usage import LimitsSetting, Usage
from .admission import MAX_STREAMS, MAX_STREAMS_PER_USER, Admission
from .door import Door
from .errors import ApiError
from .owners import Owners
from .stream import Streams, cursor

if TYPE_CHECKING:
    from ..assistant import Authenticate

logger = logging.getLogger("turnkeeper.api")

NO_CONVERSATION = "No conversation has this id, or the token does not open it."
NO_TURN = "No turn has this id, or the token does not open it."
BUSY = "This conversation has a turn that is not done yet; its turn_id is the one to follow."
NOT_WAITING = "This turn is not waiting for a decision on that tool use."
SIGN_IN = "Sign in to talk to the assistant."
NO_LIST = "Conversations are listed only for signed-in users; this assistant has no sign-in."
MAX_ID = 64
PAGE = 200
"""Transcript messages per page, unless `?limit=` says otherwise (at most MAX_PAGE)."""
MAX_PAGE = 1000
MAX_USER = 256
"""The longest user id `authenticate` may return."""
SIGNED_IN = "turnkeeper.user"
"""Where a request's scope keeps its signed-in user once `authenticate` named it."""


class Routes:
    """The API's routes over one store and queue; who may open what is decided here (tokens, or
    `authenticate`'s users)."""

    def __init__(
        self,
        store: Store,
        queue: Queue,
        *,
        catalogs: Catalogs | None = None,
        authenticate: Authenticate | None = None,
        limits: LimitsSetting = None,
        owner: Owner | None = None,
        fate: Fate | None = None,
        max_streams: int = MAX_STREAMS,
        max_streams_per_user: int = MAX_STREAMS_PER_USER,
    ) -> None:
        self.store = store
        self.queue = queue
        self.owners = Owners(store)
        self.catalogs = catalogs or Catalogs()
        self.authenticate = authenticate
        self.streams = Streams(store)
        """The event streams this app serves (stream.py): their settings, `close()` on shutdown."""
        self.admission = Admission(self.reader, most=max_streams, per_reader=max_streams_per_user)
        """How many streams each reader, and the app, has open (admission.py)."""
        self.door = Door(store, limits, self.catalogs, owner=owner, fate=fate)
        """The assistant's limits at the door: a new turn let in, or `429` (door.py); each
        turn let in records the assistant that owns it and its `fate`."""

    async def conversations(self, request: Request) -> Response:
        """`POST`: a new conversation; `GET`: the signed-in user's, newest first."""
        if request.method == "POST":
            return await self.create_conversation(request)
        return await self.listed(request)

    async def create_conversation(self, request: Request) -> Response:
        user = await self._user(request)
        token, token_hash = new_token()
        conversation_id = await self.store.create_conversation(token_hash, owner=user)
        return JSONResponse({"conversation_id": conversation_id, "token": token}, 201)

    async def listed(self, request: Request) -> Response:
        """The signed-in user's conversations, newest first."""
        if self.authenticate is None:
            raise ApiError(404, NO_LIST)
        user = await self._user(request)
        assert user is not None
        listed = [
            {
                "conversation_id": c.conversation_id,
                "created_at": datetime.fromtimestamp(c.created, UTC).isoformat(),
                "title": c.title,
            }
            for c in await self.store.conversations(user)
        ]
        return JSONResponse({"conversations": listed})

    async def create_turn(self, request: Request) -> Response:
        user = await self._user(request)
        conversation_id = await self._conversation(request, user)
        body = await _json_body(request)
        text = _question(body)
        locale = self._locale(body, request)
        try:
            turn = await self.door.create_turn(conversation_id, text, user=user, locale=locale)
        except Busy:
            running = await self.store.open_turn(conversation_id)
            return JSONResponse({"error": BUSY, "turn_id": running}, 409)
        except NoConversation:  # deleted since it was opened
            raise ApiError(404, NO_CONVERSATION) from None
        try:
            await self.queue.enqueue(turn.turn_id)
        except Exception:
            logger.exception("turn %s could not be queued; finalising it as failed", turn.turn_id)
            await fail(self.store, turn.turn_id, UNCLAIMED)
            raise ApiError(503, "The turn could not be queued; try again later.") from None
        return JSONResponse({"turn_id": turn.turn_id}, 202)

    async def turn_state(self, request: Request) -> Response:
        """The poll: who opens the turn is remembered (owners.py), so it costs one read, the
        state's, which also finds a turn deleted since (`404`)."""
        turn_id = await self._turn(request, await self._user(request), poll=True)
        after = _after(_after_param(request))
        try:
            state = await self.store.poll(turn_id, after)
        except NoTurn:
            raise ApiError(404, NO_TURN) from None
        return Response(status_code=204) if state is None else JSONResponse(state)

    async def events(self, request: Request) -> Response:
        """The turn's events after the cursor, as server-sent events (stream.py)."""
        turn_id = await self._turn(request, await self._user(request))
        after = cursor(request.headers.get("last-event-id"), request.query_params.get("after"))
        return self.streams.response(turn_id, after)

    async def cancel(self, request: Request) -> Response:
        turn_id = await self._turn(request, await self._user(request))
        await self.store.request_cancel(turn_id)
        # A turn waiting for a person stops at once; of several Stops (or a Stop and an
        # approval, a sweeper) one ends it, the others find it decided: 202 all the same.
        await stop_waiting(self.store, turn_id)
        return JSONResponse({"turn_id": turn_id}, 202)

    async def approvals(self, request: Request) -> Response:
        """A person's decision on a tool use the turn waits for; once every one is decided,
        the turn is queued again and resumes in a new job."""
        turn_id = await self._turn(request, await self._user(request))
        tool_use_id, approved = _decision(await _json_body(request))
        made = await self.store.decide(turn_id, tool_use_id, approved)
        if made is None:
            await self.found(turn_id)
            raise ApiError(409, NOT_WAITING)
        status, _ = made
        if status is Status.QUEUED:
            try:
                await self.queue.enqueue(turn_id)
            except Exception:
                logger.exception("turn %s could not be queued again; finalising it", turn_id)
                await fail(self.store, turn_id, UNCLAIMED)
                raise ApiError(503, "The turn could not be queued; try again later.") from None
        return JSONResponse({"turn_id": turn_id, "status": status}, 202)

    async def conversation(self, request: Request) -> Response:
        """The transcript's newest page (`?before=N`: the page that ends before message N,
        counted from 0 = the oldest; `?limit=M` messages), oldest first; `before` is the
        cursor of the page before it, null on the first; `ratings`, the reader's rating of
        each of the page's turns that has one."""
        conversation_id = await self._conversation(request, await self._user(request))
        before, limit = _page(request)
        page = await self.store.transcript(conversation_id, before=before, limit=limit)
        usage = Usage()
        for turn in await self.store.usages(conversation_id):
            usage.add(turn)
        running = await self.store.open_turn(conversation_id)
        return JSONResponse(
            {
                "conversation_id": conversation_id,
                "messages": page.messages,
                "usage": usage.as_dict(),
                "running_turn_id": running,
                "before": page.first or None,
                "ratings": page.ratings,
            }
        )

    async def usage(self, request: Request) -> Response:
        """`GET /api/usage`: the signed-in caller's usage today and limits (door.py)."""
        return await self.door.usage(request, await self._user(request))

    def _locale(self, body: dict[str, Any], request: Request) -> str:
        """The reader's locale, negotiated against the catalogs: the body's `locale` (the
        widget's own negotiation), else the Accept-Language header's; `en` if neither fits."""
        given = body.get("locale")
        if given is None:
            return self.catalogs.negotiate(accepted(request.headers.get("accept-language", "")))
        try:
            return self.catalogs.negotiate([locale_tag(given)])
        except ConfigError:
            raise ApiError(
                400, '"locale" must be a BCP 47 language tag, like "fr" or "pt-BR".'
            ) from None

    # ---- auth ---------------------------------------------------------------

    async def _user(self, request: Request) -> str | None:
        """The signed-in user (`401` without one); None when tokens open conversations."""
        if self.authenticate is None:
            return None
        if SIGNED_IN in request.scope:  # named once per request (admission.py asked first)
            return str(request.scope[SIGNED_IN])
        user = self.authenticate(request)
        if inspect.isawaitable(user):
            user = await user
        if user is None:
            raise ApiError(401, SIGN_IN)
        if not isinstance(user, str) or not user or len(user) > MAX_USER:
            raise TypeError(
                f"authenticate() returned {user!r}: it must return a user id "
                f"(a non-empty string of at most {MAX_USER} characters) or None"
            )
        request.scope[SIGNED_IN] = user
        return user

    async def reader(self, request: Request) -> str | None:
        """Whose stream a request opens, for its caps (admission.py): the signed-in user;
        without sign-in, the holder of the bearer token; else nobody in particular."""
        user = await self._user(request)
        if user is not None:
            return f"user:{user}"
        token = _bearer(request)
        return None if token is None else f"token:{hash_token(token)}"

    async def _conversation(self, request: Request, user: str | None) -> str:
        """The conversation's id, if the caller may open it; its guard is read from the store
        (one read, as for an unknown id), so a deleted one is `404` in every process."""
        conversation_id = request.path_params["conversation_id"]
        if not _plausible(conversation_id):
            raise ApiError(404, NO_CONVERSATION)
        guard = await self.store.guard(conversation_id)
        if not self._opens(request, guard, user):
            raise ApiError(404, NO_CONVERSATION)
        return str(conversation_id)

    async def _turn(self, request: Request, user: str | None, *, poll: bool = False) -> str:
        """The turn's id, if the caller may open it: its owners read from the store (one
        read, as for an unknown id), or, for the poll, remembered (owners.py)."""
        turn_id = request.path_params["turn_id"]
        if not _plausible(turn_id):
            raise ApiError(404, NO_TURN)
        known = poll and self.owners.knows(turn_id)
        owned = await (self.owners.of_turn(turn_id) if poll else self.store.turn_guard(turn_id))
        if owned is None or not self._opens(request, owned[1], user):
            if known:  # cost what a lookup of an unknown id costs (one read), so a 404 for
                await self.store.turn_guard(turn_id)  # another's turn tells nothing by its time
            raise ApiError(404, NO_TURN)
        return str(turn_id)

    async def found(self, turn_id: str) -> None:
        """`404` if the turn is gone (deleted since it was opened): what a refusal of it
        says, rather than that it is not waiting or not done."""
        if await self.store.turn(turn_id) is None:
            raise ApiError(404, NO_TURN)

    def _opens(self, request: Request, guard: Guard | None, user: str | None) -> bool:
        """Whether the caller may open the conversation `guard` guards (None: no such
        conversation): its owner, when users sign in; else the holder of its bearer token."""
        if guard is None:
            return False
        if self.authenticate is not None:
            return guard.owner is not None and guard.owner == user
        token = _bearer(request)
        if token is None:
            return False
        return hmac.compare_digest(guard.token_hash, hash_token(token))


def _bearer(request: Request) -> str | None:
    """The request's bearer token, if it sends one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


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


def _page(request: Request) -> tuple[int | None, int]:
    """`?before=` (None: the newest page) and `?limit=` of a transcript page."""
    before = request.query_params.get("before")
    limit = request.query_params.get("limit")
    if before is not None and not _whole(before):
        raise ApiError(400, '"before" must be a whole number of zero or more.')
    if limit is not None and not (_whole(limit) and 1 <= int(limit) <= MAX_PAGE):
        raise ApiError(400, f'"limit" must be a whole number from 1 to {MAX_PAGE}.')
    return (None if before is None else int(before)), (PAGE if limit is None else int(limit))


def _whole(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= 18


def _decision(body: Any) -> tuple[str, bool]:
    if not isinstance(body, dict):
        raise ApiError(400, 'The body must be a JSON object with "tool_use_id" and "approved".')
    tool_use_id, approved = body.get("tool_use_id"), body.get("approved")
    if not isinstance(tool_use_id, str):
        raise ApiError(400, '"tool_use_id" must be the id of a tool use the turn waits for.')
    if not isinstance(approved, bool):
        raise ApiError(400, '"approved" must be true or false.')
    return tool_use_id, approved


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
