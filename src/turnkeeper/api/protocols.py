"""The two protocols' HTTP side: AG-UI at `POST /api/ag-ui`, the AI SDK's UI message
stream at `POST /api/chat`, `GET /api/chat/{id}/stream` and `GET /api/chat/{id}/messages`.

Both are projections of the turn's event log (ag_ui.py, ui_stream.py): a
request asks a question (or decides the uses a turn waits for), and the
response follows the turn's events, mapped, as server-sent events. The
conversation's id is the client's (`threadId`, the chat's `id`), within its
owner's space (chat_ids.py): the signed-in user's, or the token's sent as
`Authorization: Bearer` (a request without one makes a new token, sent back in
`x-turnkeeper-token`). Two owners' same id are two conversations, and another's
id is an unused one: created on first use, never `404`. The server's history
is the truth: the history a client sends is not read, only its newest question
(or decision). A client that drops the connection does not stop the turn: Stop
is `POST /api/turns/{turn_id}/cancel`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..store import UNCLAIMED, Busy, NoConversation, hash_token
from ..store.records import EventType, TurnEvent
from ..turn.lifecycle import fail
from .ag_ui import AgUiRun, parse_interrupt, transcript_messages
from .chat_ids import Space, fresh_space, owns, token_space, user_space
from .errors import ApiError
from .protocol_bodies import (
    ag_ui_question,
    approvals,
    chat_body,
    chat_question,
    client_id,
    run_input,
)
from .routes import BUSY, NO_CONVERSATION, _json_body
from .stream import _Response
from .transcripts import Transcripts, withdrawn
from .ui_stream import HEADERS, UiStream

if TYPE_CHECKING:
    from .routes import Routes

TOKEN_HEADER = "x-turnkeeper-token"
"""The header that carries a new conversation's token when the assistant has no sign-in."""
TURN_HEADER = "x-turnkeeper-turn"
"""The header that names the turn a response follows (what `POST /api/turns/{id}/cancel`
stops)."""
CONVERSATION_HEADER = "x-turnkeeper-conversation"
"""The header that names the stored conversation a client's id names (the id of
`/api/conversations/{id}`)."""
UNKNOWN_INTERRUPT = "No turn of this thread waits on that interrupt."
EXPIRED = "That interrupt is no longer answered: its turn stopped waiting."
UNDECIDED = "The turn still waits on interrupts this run did not answer."
NOT_WAITING = "This conversation has no turn waiting for that decision."


class Protocols:
    """The protocol routes over the API's own `Routes` (who opens what, the store, the
    queue, the streams' settings)."""

    def __init__(self, routes: Routes) -> None:
        self.routes = routes
        self.store = routes.store
        self.streams = routes.streams
        self.transcripts = Transcripts(routes.store)

    def endpoints(self) -> list[Route]:
        """`POST /api/ag-ui`, `POST /api/chat`, `GET /api/chat/{chat_id}/stream` and
        `GET /api/chat/{chat_id}/messages`."""
        return [
            Route("/api/ag-ui", self.ag_ui, methods=["POST"]),
            Route("/api/chat", self.chat, methods=["POST"]),
            Route("/api/chat/{chat_id}/stream", self.chat_stream),
            Route("/api/chat/{chat_id}/messages", self.chat_messages),
        ]

    # ---- AG-UI ------------------------------------------------------------

    async def ag_ui(self, request: Request) -> Response:
        """`POST /api/ag-ui`: a `RunAgentInput` → the run's AG-UI events."""
        try:
            user = await self.routes._user(request)
            given = run_input(await _json_body(request))
            question = ag_ui_question(given)
            if not given.resume and question is None:
                return await self._ag_ui_loaded(request, given, user)
            thread, token = await self._claim(request, given.thread_id, user)
            resolve = self._resolver(request)
            if given.resume:
                turn_id, after = await self._resume_ag_ui(thread, given)
            else:
                turn_id, after = await self._ask(request, thread, str(question), user)
        except ApiError as e:
            return _ag_ui_refused(e)
        except _RunError as e:
            return self._sse(_ag_ui_error(given, e), {})
        history = transcript_messages(await self._transcript(thread))
        run = AgUiRun(given.thread_id, given.run_id, turn_id, resolve, history=history)
        headers = {TURN_HEADER: turn_id, CONVERSATION_HEADER: thread, **_token(token)}
        return self._sse(self._ag_ui_events(run, turn_id, after), headers)

    async def _ag_ui_loaded(
        self, request: Request, given: RunAgentInput, user: str | None
    ) -> Response:
        """A run without a new question (a client that loads the thread): `RUN_STARTED`,
        the conversation's `MESSAGES_SNAPSHOT`, then its active turn from its first event
        (`RUN_FINISHED` at once when none). An unknown thread, another's included, is an
        empty snapshot; nothing is created."""
        thread = await self._find(request, given.thread_id, user)
        resolve = self._resolver(request)
        history = (
            await self.transcripts.ag_ui_messages(thread, given.thread_id, resolve)
            if thread
            else []
        )
        turn_id = await self.store.open_turn(thread) if thread else None
        run = AgUiRun(given.thread_id, given.run_id, turn_id or "", resolve, history=history)
        headers = {TURN_HEADER: turn_id} if turn_id else {}
        return self._sse(self._ag_ui_events(run, turn_id, 0, snapshot=True), headers)

    async def _ag_ui_events(
        self, run: AgUiRun, turn_id: str | None, after: int, *, snapshot: bool = False
    ) -> AsyncIterator[bytes]:
        encoder, n = EventEncoder(), 0
        first = [*run.started(), *([run.snapshotted()] if snapshot else [])]
        for started in first if turn_id else [*first, *run.finished()]:
            n += 1
            yield f"id: {n}\n{encoder.encode(started)}".encode()
        if turn_id is None:
            return
        async for event, shown in self._events(turn_id, after, through_waits=False):
            for mapped in run.feed(event, shown):
                n += 1
                yield f"id: {n}\n{encoder.encode(mapped)}".encode()

    async def _resume_ag_ui(self, thread: str, given: RunAgentInput) -> tuple[str, int]:
        decisions: dict[str, bool] = {}
        turns: set[str] = set()
        for entry in given.resume or []:
            named = parse_interrupt(entry.interrupt_id)
            if named is None:
                raise _RunError(UNKNOWN_INTERRUPT, "unknown_interrupt")
            turns.add(named[0])
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            decisions[named[1]] = entry.status == "resolved" and payload.get("approved") is True
        if len(turns) != 1:
            raise _RunError(UNKNOWN_INTERRUPT, "unknown_interrupt")
        (turn_id,) = turns
        owned = await self.store.turn_guard(turn_id)
        if owned is None or owned[0] != thread:
            raise _RunError(UNKNOWN_INTERRUPT, "unknown_interrupt")
        return turn_id, await self._decide(turn_id, decisions, _RunError)

    async def _decide(
        self, turn_id: str, decisions: Mapping[str, bool], error: Callable[[str, str], Exception]
    ) -> int:
        """Decide the uses a turn waits for (a decision already made changes nothing); the
        cursor of the wait they belong to, the stream going on after it."""
        cursor = await self._wait_of(turn_id, set(decisions))
        if cursor is None:
            raise error(UNKNOWN_INTERRUPT, "unknown_interrupt")
        queued = False
        for tool_use_id, approved in decisions.items():
            made = await self.store.decide(turn_id, tool_use_id, approved)
            queued = queued or (made is not None and made[0] == "queued")
        if queued:
            await self._enqueue(turn_id)
        after = await self.store.events_after(turn_id, cursor, 1)
        if after and after[0].type is EventType.TURN_ENDED:
            raise error(EXPIRED, "expired")
        if not after:
            state = await self.store.state_after(turn_id, 0)
            if state is not None and state.get("status") == "waiting":
                raise error(UNDECIDED, "undecided")
        return cursor

    async def _wait_of(self, turn_id: str, uses: set[str]) -> int | None:
        """The seq of the `turn.waiting` that ended the run which asked about `uses`."""
        asked: set[str] = set()
        after = 0
        while page := await self.store.events_after(turn_id, after):
            for event in page:
                if event.type is EventType.APPROVAL_REQUESTED:
                    asked = {str(a.get("tool_use_id")) for a in event.body.get("approvals", [])}
                elif event.type is EventType.TURN_WAITING and uses and uses <= asked:
                    return event.seq
            after = page[-1].seq
        return None

    # ---- the AI SDK's UI message stream -------------------------------------

    async def chat(self, request: Request) -> Response:
        """`POST /api/chat`: `useChat`'s body → the turn's UI message stream."""
        try:
            user = await self.routes._user(request)
            body = await _json_body(request)
            chat_id, messages = chat_body(body)
            thread, token = await self._claim(request, chat_id, user)
            last = messages[-1]
            decisions = approvals(last)
            if decisions:
                turn_id, after = await self._resume_chat(thread, decisions)
            else:
                turn_id, after = await self._ask(request, thread, chat_question(last), user)
        except ApiError as e:
            return _chat_refused(e)
        return await self._ui_response(
            request, turn_id, after, through_waits=False, headers=_named(thread, token)
        )

    async def chat_stream(self, request: Request) -> Response:
        """`GET /api/chat/{id}/stream`: the conversation's active turn from its first part;
        `204` when none is active, or the caller has no conversation of this id (it would
        be created by their first message)."""
        try:
            user = await self.routes._user(request)
            chat_id = await self._find(request, request.path_params["chat_id"], user)
        except ApiError as e:
            return _chat_refused(e)
        turn_id = await self.store.open_turn(chat_id) if chat_id else None
        if chat_id is None or turn_id is None:
            return Response(status_code=204)
        headers = {CONVERSATION_HEADER: chat_id}
        return await self._ui_response(request, turn_id, 0, through_waits=True, headers=headers)

    async def chat_messages(self, request: Request) -> Response:
        """`GET /api/chat/{id}/messages`: the conversation as the AI SDK's `UIMessage[]`
        (transcripts.py), what `useChat({messages})` starts from; `[]` when the caller has
        no conversation of this id. The active turn's answer is left to the stream."""
        try:
            user = await self.routes._user(request)
            chat_id = await self._find(request, request.path_params["chat_id"], user)
        except ApiError as e:
            return _chat_refused(e)
        if chat_id is None:
            return JSONResponse([])
        loaded = await self.transcripts.ui_messages(chat_id, self._resolver(request))
        return JSONResponse(loaded, headers={CONVERSATION_HEADER: chat_id})

    async def _resume_chat(self, thread: str, decisions: Mapping[str, bool]) -> tuple[str, int]:
        turn_id = await self.store.open_turn(thread)
        if turn_id is None:
            raise ApiError(409, NOT_WAITING)
        return turn_id, await self._decide(turn_id, decisions, _conflict)

    async def _ui_response(
        self,
        request: Request,
        turn_id: str,
        after: int,
        *,
        through_waits: bool,
        headers: Mapping[str, str],
    ) -> Response:
        record = await self.store.resume_record(turn_id)
        decisions = dict(record.decisions) if record is not None else {}
        parts = UiStream(turn_id, self._resolver(request), decisions)
        headers = {**HEADERS, TURN_HEADER: turn_id, **headers}
        return self._sse(self._ui_parts(parts, turn_id, after, through_waits), headers)

    async def _ui_parts(
        self, parts: UiStream, turn_id: str, after: int, through_waits: bool
    ) -> AsyncIterator[bytes]:
        yield _data(parts.opening())
        skip = withdrawn(await self.transcripts.log(turn_id))
        async for event, shown in self._events(turn_id, after, through_waits=through_waits):
            if event.seq in skip:
                continue
            waits = event.type is EventType.TURN_WAITING and shown
            if waits and (not through_waits or await self._halts(turn_id, event)):
                yield _data(parts.feed(event) + parts.waited())
                break
            yield _data(parts.feed(event, shown))
        yield b"data: [DONE]\n\n"

    # ---- shared -------------------------------------------------------------

    async def _claim(
        self, request: Request, chat_id: str, user: str | None
    ) -> tuple[str, str | None]:
        """The stored id of the conversation the client's id names in the caller's space
        (chat_ids.py), created if it has none; the new token to send back, when the request
        brought none (no sign-in)."""
        space = self._space(request, user, fresh=True)
        assert space is not None
        conversation_id = space.conversation(client_id(chat_id))
        if await self.store.guard(conversation_id) is None:
            await self.store.create_conversation(
                space.token_hash, owner=space.user, conversation_id=conversation_id
            )
        if not owns(await self.store.guard(conversation_id), space):
            raise ApiError(404, NO_CONVERSATION)  # deleted since: as if it never was
        return conversation_id, space.token

    async def _find(self, request: Request, chat_id: str, user: str | None) -> str | None:
        """The stored id of the caller's conversation of this client id; None if they have
        none (nothing is created)."""
        space = self._space(request, user, fresh=False)
        if space is None:
            return None
        conversation_id = space.conversation(client_id(chat_id))
        return conversation_id if owns(await self.store.guard(conversation_id), space) else None

    def _space(self, request: Request, user: str | None, *, fresh: bool) -> Space | None:
        """The caller's space: the signed-in user's, else the bearer token's; without a
        token, a new one's if `fresh`, else None."""
        if user is not None:
            return user_space(user)
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token_space(hash_token(token.strip()))
        return fresh_space() if fresh else None

    async def _ask(
        self, request: Request, conversation_id: str, text: str, user: str | None
    ) -> tuple[str, int]:
        locale = self.routes._locale({}, request)
        try:
            turn = await self.routes.door.create_turn(
                conversation_id, text, user=user, locale=locale
            )
        except Busy:
            raise ApiError(409, BUSY) from None
        except NoConversation:  # deleted since it was claimed
            raise ApiError(404, NO_CONVERSATION) from None
        await self._enqueue(turn.turn_id)
        return turn.turn_id, 0

    async def _enqueue(self, turn_id: str) -> None:
        try:
            await self.routes.queue.enqueue(turn_id)
        except Exception:
            await fail(self.store, turn_id, UNCLAIMED)
            raise ApiError(503, "The turn could not be queued; try again later.") from None

    async def _transcript(self, conversation_id: str) -> list[dict[str, Any]]:
        page = await self.store.transcript(conversation_id, before=None, limit=1000)
        return [m for m in page.messages if isinstance(m, dict)]

    def _resolver(self, request: Request) -> Callable[[str], str]:
        locale = self.routes._locale({}, request)
        catalogs = self.routes.catalogs
        return lambda key: catalogs.resolve(key, locale) or key

    async def _events(
        self, turn_id: str, after: int, *, through_waits: bool
    ) -> AsyncIterator[tuple[TurnEvent, bool]]:
        """The turn's events, each with whether it comes after the cursor (those before it
        are read again so the projection knows what the client saw); ends after
        `turn.ended`, and after a `turn.waiting` unless `through_waits`."""
        seen = 0
        while page := await self.store.events_after(turn_id, seen, self.streams.buffer):
            for event in page:
                if event.seq > after:
                    break
                yield event, False
                seen = event.seq
            else:
                continue
            break
        async for event in self._follow(turn_id, max(seen, after)):
            yield event, True
            if event.type is EventType.TURN_ENDED:
                return
            if event.type is EventType.TURN_WAITING and not through_waits:
                return

    async def _follow(self, turn_id: str, after: int) -> AsyncIterator[TurnEvent]:
        streams = self.streams
        with self.store.subscribe(turn_id) as woken:
            while not streams.closing.is_set():
                woken.clear()
                page = await streams._page(turn_id, after)
                if page is None:
                    return
                for event in page:
                    yield event
                    after = event.seq
                if not page:
                    await streams._wait(woken)

    async def _halts(self, turn_id: str, waiting: TurnEvent) -> bool:
        """Whether a stream that goes through waits ends at this `turn.waiting`: nothing
        follows it yet and the turn still waits."""
        if await self.store.events_after(turn_id, waiting.seq, 1):
            return False
        state = await self.store.state_after(turn_id, 0)
        return state is None or state.get("status") == "waiting"

    def _sse(self, body: AsyncIterator[bytes], headers: Mapping[str, str]) -> Response:
        return _Response(
            body,
            ping=self.streams.keep_alive,
            send_timeout=self.streams.send_timeout,
            shutdown_event=self.streams.closing,
            headers={"cache-control": "no-store", "x-accel-buffering": "no", **headers},
        )


class _RunError(Exception):
    """A run that is answered with `RUN_ERROR` (an unknown or expired interrupt)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _conflict(message: str, code: str) -> Exception:
    return ApiError(409, message)


async def _ag_ui_error(given: RunAgentInput, error: _RunError) -> AsyncIterator[bytes]:
    run = AgUiRun(given.thread_id, given.run_id, "", lambda key: key)
    encoder = EventEncoder()
    for n, event in enumerate([*run.started(), *run.error(error.message, error.code)], 1):
        yield f"id: {n}\n{encoder.encode(event)}".encode()


def _ag_ui_refused(e: ApiError) -> Response:
    body = {"error": e.message, "type": "RUN_ERROR", "message": e.message, **e.fields}
    return JSONResponse({**body, "code": _code(e.status)}, e.status, headers=e.headers)


def _chat_refused(e: ApiError) -> Response:
    body = {"error": e.message, "type": "error", "errorText": e.message, **e.fields}
    return JSONResponse(body, e.status, headers=e.headers)


def _named(conversation_id: str, token: str | None) -> dict[str, str]:
    return {CONVERSATION_HEADER: conversation_id, **_token(token)}


def _data(parts: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(p, ensure_ascii=False)}\n\n".encode() for p in parts)


def _token(token: str | None) -> dict[str, str]:
    return {TOKEN_HEADER: token} if token is not None else {}


def _code(status: int) -> str:
    codes = {400: "invalid_request", 401: "sign_in", 404: "not_found", 409: "busy"}
    codes[429] = "rate_limited"
    return codes.get(status, "unavailable" if status >= 500 else "refused")
