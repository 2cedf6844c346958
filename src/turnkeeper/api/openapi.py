"""The OpenAPI document served at `/openapi.json`, generated from the API's own types.

Each body the API reads or serves is a pydantic model here; the document's
schemas are those models' JSON schemas, so what it declares (a `text` that is
not blank, the bounds of `after`, every status a turn can have) cannot drift
from what the code checks and writes. `State` and `Bubble` mirror
`turnkeeper.state.PublishedState` and `Bubble` field for field (a test holds
them together), and schemathesis checks the served responses against it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ..outcomes import TurnStatus
from ..state import Role
from . import openapi_controls as controls
from . import openapi_streams as streams
from .openapi_controls import Approval, Decided, Decision, DecisionMade
from .routes import MAX_PAGE, PAGE

MAX_AFTER = 10**18 - 1
"""`after` is at most 18 digits."""


class Error(BaseModel):
    error: str = Field(description="One clear sentence saying what was wrong.")


class Created(BaseModel):
    conversation_id: str
    token: str = Field(description="The bearer token every later call on it needs.")


SPACES = (
    r"\t\n\u000b\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""The characters the API takes as blank (`str.isspace`), written out: `\\s` means other
sets in JSON Schema's regular expressions (ECMA-262) and in Python's."""


LOCALE = r"^[A-Za-z]{2,3}([-_][A-Za-z]{4})?([-_]([A-Za-z]{2}|[0-9]{3}))?$"
"""A BCP 47 tag of the forms catalogs have: language, then an optional script and region."""


class TurnRequest(BaseModel):
    text: Annotated[
        str,
        Field(
            min_length=1,
            pattern=rf"^[^\u0000]*[^\u0000{SPACES}][^\u0000]*$",
            description="The user's question: not blank, no NUL character.",
        ),
    ]
    locale: Annotated[
        str | None,
        Field(
            pattern=LOCALE,
            description="The reader's BCP 47 locale (`fr`, `pt-BR`), negotiated against the "
            "catalogs; without it, the Accept-Language header's.",
        ),
    ] = None


class Queued(BaseModel):
    turn_id: str


class CardField(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    value: str


class CardLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    url: str = Field(description="Any address; the widget shows only `https:` ones.")


class Card(BaseModel):
    """A card a tool returned (`turnkeeper.Card.to_json()`): every value is text."""

    model_config = ConfigDict(extra="forbid")

    title: str
    fields: list[CardField] = Field(description="Label and value pairs, in order.")
    columns: list[str] = Field(description="The table's headings; may be empty.")
    rows: list[list[str]] = Field(description="The table's rows, each as wide as the others.")
    links: list[CardLink]


class Bubble(BaseModel):
    """A published message: model `text`, a runtime notice's i18n `key`, a tool's `card`,
    or a person's `decision` on a tool use (role `user`)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    role: Role
    text: str | None = None
    key: str | None = None
    is_error: bool | None = None
    card: Card | None = None
    decision: DecisionMade | None = None


class Usage(BaseModel):
    """Sums over the turn's model calls (`turnkeeper.usage.Usage.as_dict()`)."""

    model_config = ConfigDict(extra="forbid")

    iterations: int = Field(ge=0, description="Model calls that returned.")
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cache_creation_input_tokens: int = Field(ge=0)
    cache_read_input_tokens: int = Field(ge=0)
    web_search_requests: int = Field(ge=0)
    web_fetch_requests: int = Field(ge=0)
    cost_usd: float | None = Field(
        default=None, ge=0, description="US dollars, present when every model's price is known."
    )


class State(BaseModel):
    """The published state of a turn (`PublishedState.to_json()`)."""

    model_config = ConfigDict(extra="forbid")

    turn_id: str
    conversation_id: str
    version: int = Field(ge=1)
    status: TurnStatus = Field(description="queued, running, waiting, or how the turn ended.")
    done: bool
    stopped: bool
    has_error: bool
    activity: str | None = Field(description="An i18n key of what just happened, or null.")
    messages: list[Bubble]
    usage: Usage
    approvals: list[Approval] | None = Field(
        default=None, description="While `waiting`: the tool uses a person is to decide on."
    )


class Conversation(BaseModel):
    conversation_id: str
    created_at: str = Field(description="When it was started (ISO 8601, UTC).")
    title: str | None = Field(description="Its first question, or null before one.")


class Conversations(BaseModel):
    conversations: list[Conversation] = Field(description="Newest first.")


class About(BaseModel):
    """What the widget needs to know of the assistant before its first question."""

    name: str = Field(description="The assistant's name, for the header and its bubbles.")
    locales: list[str] = Field(description="The locales with a catalog, `en` first.")
    users: bool = Field(description="Readers sign in: the API answers 401 without a user.")


class TranscriptMessage(Bubble):
    """A published message in a transcript, with the turn it belongs to."""

    turn_id: str


class Transcript(BaseModel):
    conversation_id: str
    messages: list[TranscriptMessage]
    usage: Usage = Field(description="Summed over the conversation's turns.")
    running_turn_id: str | None = Field(
        default=None, description="The turn that is not done yet (to follow), or null."
    )
    before: int | None = Field(
        default=None,
        ge=1,
        description="The `before` of the page of older messages, or null: this page is the first.",
    )
    ratings: dict[str, Literal["up", "down"]] = Field(
        default_factory=dict,
        description="The reader's rating of each turn of this page that has one, as last given"
        " (`POST /api/turns/{turn_id}/feedback`), by turn id; a turn not rated is absent.",
    )


class Busy(BaseModel):
    """`409`: the conversation already has a turn that is not done: follow that one."""

    error: str
    turn_id: str | None = Field(description="The turn that is not done yet.")


class Limited(BaseModel):
    """`429`: over a limit (docs/design.md §13); `Retry-After` says when to ask again."""

    error: str = Field(description="The limit's text in the reader's language.")
    key: Literal[
        "limits.turns_per_minute",
        "limits.tokens_per_day",
        "limits.cost_per_day",
        "limits.streams_per_user",
    ]
    retry_after: int = Field(ge=1, description="Whole seconds, as the `Retry-After` header.")


class LimitUse(BaseModel):
    used: float = Field(ge=0)
    limit: float | None = Field(description="The caller's limit, or null: none.")
    resets_in: int | None = Field(description="Whole seconds until it resets (null: nothing to).")
    resets_at: str | None = Field(description="When it resets (ISO 8601, UTC), or null.")


class UsageToday(BaseModel):
    """`GET /api/usage`: the signed-in caller's usage and limits (a UTC day's, the last
    minute's turns)."""

    day: str = Field(description="The UTC day, YYYY-MM-DD.")
    turns_per_minute: LimitUse
    tokens_per_day: LimitUse
    cost_per_day: LimitUse = Field(description="US dollars.")


MODELS: tuple[type[BaseModel], ...] = (
    Error,
    Created,
    TurnRequest,
    Queued,
    Decision,
    Decided,
    State,
    Transcript,
    Busy,
    Conversations,
    About,
    Limited,
    UsageToday,
    *controls.MODELS,
)
BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
_NEW_OR_BEARER: list[dict[str, list[str]]] = [*BEARER, {}]
"""A protocol's conversation: its token, or none for a new one (its token comes back)."""
_QUESTION = TurnRequest.model_json_schema()["properties"]["text"]["pattern"]
_AG_UI = streams.stream("the run's AG-UI events", streams.AG_UI_EVENT)
_UI = streams.stream("the UI message stream", streams.UI_PART)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _answer(description: str, model: type[BaseModel] | None = None) -> dict[str, Any]:
    if model is None:
        return {"description": description}
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(c): _answer("error", Error) for c in codes}


def _id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _schemas() -> dict[str, Any]:
    _, top = models_json_schema(
        [(m, "serialization") for m in MODELS], ref_template="#/components/schemas/{model}"
    )
    schemas: dict[str, Any] = top["$defs"]
    return schemas


AFTER = {
    "name": "after",
    "in": "query",
    "description": "Answer 204 while the state's version is not above this.",
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_AFTER},
}

EVENTS_AFTER = {
    "name": "after",
    "in": "query",
    "description": "Resume after this event's number (`Last-Event-ID` wins when both are sent).",
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_AFTER},
}

LAST_EVENT_ID = {
    "name": "Last-Event-ID",
    "in": "header",
    "description": "The number of the last event the reader has: the stream resumes after it.",
    "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
}

BEFORE = {
    "name": "before",
    "in": "query",
    "description": "The page that ends before this message (0 is the oldest): a page's "
    "`before`. Without it, the newest page.",
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_AFTER},
}

LIMIT = {
    "name": "limit",
    "in": "query",
    "description": f"At most this many messages (default {PAGE}).",
    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
}

_LIMITED = {
    **_answer("over a limit: nothing was queued", Limited),
    "headers": {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}},
}
_STREAMS = _LIMITED | {"description": "the reader has as many streams open as they may"}

PATHS: dict[str, Any] = {
    "/api/conversations": {
        "post": {
            "summary": "Start a conversation; keep its token (signed in: it is the user's).",
            "responses": {"201": _answer("created", Created), **_errors(401, 413)},
        },
        "get": {
            "summary": "The signed-in user's conversations, newest first (404 without sign-in).",
            "responses": {"200": _answer("conversations", Conversations), **_errors(401, 404)},
        },
    },
    "/api/conversations/{conversation_id}": {
        "get": {
            "summary": "A page of every turn's messages (the newest, unless `before`), oldest "
            "first, and the conversation's summed usage.",
            "security": BEARER,
            "parameters": [_id("conversation_id"), BEFORE, LIMIT],
            "responses": {"200": _answer("transcript", Transcript), **_errors(400, 401, 404)},
        }
    },
    "/api/conversations/{conversation_id}/turns": {
        "post": {
            "summary": "Queue a turn.",
            "security": BEARER,
            "parameters": [_id("conversation_id")],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref(TurnRequest)}},
            },
            "responses": {
                "202": _answer("queued", Queued),
                **_errors(400, 401, 404, 413, 415, 503),
                "409": _answer("a turn of the conversation is not done yet", Busy),
                "429": _LIMITED,
            },
        }
    },
    "/api/turns/{turn_id}": {
        "get": {
            "summary": "The published state; 204 while its version is not above `after`.",
            "security": BEARER,
            "parameters": [_id("turn_id"), AFTER],
            "responses": {
                "200": _answer("state", State),
                "204": _answer("nothing newer"),
                **_errors(400, 401, 404),
            },
        }
    },
    "/api/turns/{turn_id}/events": {
        "get": {
            "summary": "The turn's events as server-sent events (`id: <seq>`, `event: <type>`,"
            " `data: <json>`), from after the cursor; ends after `turn.ended` or `turn.waiting`.",
            "security": BEARER,
            "parameters": [_id("turn_id"), EVENTS_AFTER, LAST_EVENT_ID],
            "responses": {
                "200": streams.stream(
                    "the event stream (a comment line keeps it alive)", streams.EVENT_LOG
                ),
                **_errors(400, 401, 404),
                "429": _STREAMS,
            },
        }
    },
    "/api/turns/{turn_id}/cancel": {
        "post": {
            "summary": "Stop the turn before its next model call.",
            "security": BEARER,
            "parameters": [_id("turn_id")],
            "responses": {"202": _answer("cancel requested", Queued), **_errors(401, 404)},
        }
    },
    "/api/turns/{turn_id}/approvals": {
        "post": {
            "summary": "Approve or deny a tool use the turn waits for; resumes it once all are.",
            "security": BEARER,
            "parameters": [_id("turn_id")],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref(Decision)}},
            },
            "responses": {
                "202": _answer("decided", Decided),
                **_errors(400, 401, 404, 409, 413, 415, 503),
            },
        }
    },
    "/api/ag-ui": {
        "post": {
            "summary": "AG-UI 1.0: a RunAgentInput (threadId names the caller's own conversation,"
            " created on first use; a newest user message is the question, `resume` decides"
            " interrupts; neither: MESSAGES_SNAPSHOT, then the active run) → AG-UI events as"
            " server-sent events. A new token (no sign-in) comes back in `x-turnkeeper-token`,"
            " the stored conversation in `x-turnkeeper-conversation`. Errors: RUN_ERROR shape.",
            "security": _NEW_OR_BEARER,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": streams.ag_ui_input(_QUESTION)}},
            },
            "responses": {
                "200": _AG_UI,
                **_errors(400, 401, 404, 409, 413, 415, 503),
                "429": _LIMITED,
            },
        }
    },
    "/api/chat": {
        "post": {
            "summary": "The AI SDK's UI message stream v1: useChat's body ({id, messages, trigger,"
            " messageId}; id names the caller's own conversation; the last user message is"
            " the question, or an assistant message's approval responses decide the uses the"
            " turn waits for) → the UI message stream (`x-vercel-ai-ui-message-stream: v1`)."
            " Errors carry the stream's error shape beside `error`.",
            "security": _NEW_OR_BEARER,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": streams.chat_request(_QUESTION)}},
            },
            "responses": {
                "200": _UI,
                **_errors(400, 401, 404, 409, 413, 415, 503),
                "429": _LIMITED,
            },
        }
    },
    "/api/chat/{chat_id}/stream": {
        "get": {
            "summary": "The conversation's active turn as a UI message stream, from its first"
            " part; 204 when none is active (or the caller has no chat of this id, as one"
            " without a token has none).",
            "security": _NEW_OR_BEARER,
            "parameters": [_id("chat_id")],
            "responses": {
                "200": _UI,
                "204": _answer("no turn is active"),
                **_errors(400, 401),
                "429": _STREAMS,
            },
        }
    },
    "/api/chat/{chat_id}/messages": controls.CHAT_MESSAGES,
    "/api/usage": {
        "get": {
            "summary": "The signed-in caller's usage today and their limits, and when each "
            "resets (404 without sign-in).",
            "responses": {"200": _answer("usage", UsageToday), **_errors(401, 404)},
        }
    },
    "/assistant.json": {
        "get": {
            "summary": "The assistant's name, its locales, and whether readers sign in.",
            "responses": {"200": _answer("about", About)},
        }
    },
}

PATHS["/api/conversations/{conversation_id}"] |= controls.CONVERSATION
PATHS["/api/turns/{turn_id}/feedback"] = controls.FEEDBACK

DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "turnkeeper",
        "version": "1",
        "description": "Every answer carries `X-Content-Type-Options: nosniff` and a "
        "`Content-Security-Policy` (scripts from the server's own origin; `frame-ancestors` "
        "its own origin and those of `serve --frame-ancestors`); without such origins, "
        "`X-Frame-Options: SAMEORIGIN` too. Every 4xx and 5xx, a refused CORS preflight "
        'included, is `{"error": "…"}`. A trailing slash is not redirected (404).',
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": _schemas(),
    },
    "paths": PATHS,
}
