"""The Anthropic Messages API through the official `anthropic` SDK (async client).

Calls stream by default (`stream=False` opts out): the assistant content
appended to the history is the body the raw events fold into (`messages_stream`;
not the SDK's accumulated message, which drops fields it has no model for: an
`mcp_tool_use`'s input, a `compaction` block's content), exactly the body a
plain call returns; a plain call reads it from the raw HTTP body. Every block
type passes through untouched, unknown ones included. While a stream arrives,
the answer's text goes to `on_text` delta by delta.

Every request marks the prompt cache (`cache_marks`) unless `prompt_cache=False`:
the tools, the instructions and the history up to the latest message are a cached
prefix, read back by the next call at a tenth of the input price.

The call, its timeout and the SDK's exceptions are `sdk.SdkProvider`'s, shared
with the OpenAI adapter.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic
import httpx2

from ..credentials import keep_secret, keep_url_secrets, redact_logger, redact_url
from ..errors import ProviderError
from ..wire import Message, ToolSpec
from . import MAX_RESPONSE, TextSink, cache_marks, messages_api, sdk, system_of
from .attempts import DEFAULT_MAX_RETRIES, DEFAULT_MIN_ATTEMPT, event_hooks
from .messages_stream import MessageFold

DEFAULT_MODEL = "claude-sonnet-4-6"
SERVER_COMPACTION_BETA = "compact-2026-01-12"
"""The beta of the API's own compaction (the context-management edit `compact_20260112`)."""
DEFAULT_MAX_TOKENS = 8192
REQUEST_ID_HEADER = "request-id"
_OPTIONS = ("timeout", "extra_body", "extra_headers")
"""Keys of `request()` that are options of the call, not fields of the body."""

# The SDK and its HTTP client log request URLs, credentials and all.
for _logger in ("anthropic._base_client", "httpx2"):
    redact_logger(_logger)


def _error_body(body: object, status: int) -> ProviderError | None:
    """The error a Messages API error body (`{"type": "error", ...}`) describes."""
    if isinstance(body, dict) and body.get("type") == "error":
        return messages_api.error_from_body(body, status)
    return None


ERRORS = sdk.SdkErrors(
    anthropic.APIStatusError, anthropic.APIConnectionError, anthropic.APITimeoutError, _error_body
)


class AnthropicProvider(sdk.SdkProvider):
    """Claude through the Messages API; history in its own wire format."""

    wire = messages_api.WIRE
    errors = ERRORS
    server_compaction: int | None = None
    """The input tokens past which the API compacts (`compacting_on_server`; 0: its own
    default), or None: it does not."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        system: str | None = None,
        server_tools: Sequence[Mapping[str, Any]] = (),
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        betas: Sequence[str] = (),
        extra_body: Mapping[str, Any] | None = None,
        stream: bool = True,
        prompt_cache: bool | str = True,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        min_attempt: float = DEFAULT_MIN_ATTEMPT,
        transport: httpx2.AsyncBaseTransport | None = None,
        max_response: int = MAX_RESPONSE,
    ) -> None:
        """`server_tools` (e.g. web search) and `mcp_servers` go to the API as given.

        `api_key` and `base_url` default to the SDK's own `ANTHROPIC_API_KEY`
        and `ANTHROPIC_BASE_URL`. `max_retries` are the SDK's retries; all
        attempts together fit in the timeout of the call (see `attempts`).
        `transport` replaces the HTTP transport under the SDK's client (an
        `httpx2.MockTransport` in tests and benchmarks); the attempt hooks stay.
        `prompt_cache` is True (the 5-minute cache), "5m", "1h" or False (no marks).
        `stream=False` makes plain calls; `max_response` bytes of content at most.
        """
        self.model = model
        self.max_response = max_response
        self.max_tokens = max_tokens
        self.system = system
        self.server_tools = [dict(t) for t in server_tools]
        self.mcp_servers = [dict(s) for s in mcp_servers]
        self.betas = list(betas)
        self.extra_body = dict(extra_body or {})
        self.stream = stream
        self.cache_ttl = cache_marks.ttl_of(prompt_cache)
        """The prompt cache's TTL ("5m" or "1h"), or None when no request is marked."""
        self._mark = None if self.cache_ttl is None else cache_marks.control(self.cache_ttl)
        self.max_retries = max_retries
        self.min_attempt = min_attempt
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            http_client=_http_client(transport),
        )
        _keep_secrets(self.client, self.mcp_servers)

    def request(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> dict[str, Any]:
        """The keyword arguments of one `messages.create` call, cache marks included
        (on copies: `history` is never written to)."""
        mark = self._mark
        messages = list(history) if mark is None else cache_marks.marked_messages(history, mark)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
            "timeout": timeout,
        }
        offered = [_tool(t) for t in tools] + self.server_tools
        if offered:
            params["tools"] = offered if mark is None else cache_marks.marked_tools(offered, mark)
        system = system_of(self.system)
        if system:
            params["system"] = system if mark is None else cache_marks.marked_system(system, mark)
        extra = dict(self.extra_body)
        if self.mcp_servers:
            extra["mcp_servers"] = self.mcp_servers
        if extra:
            params["extra_body"] = extra
        if self.betas:
            params["extra_headers"] = {"anthropic-beta": ",".join(self.betas)}
        if self.stream:
            params["stream"] = True
        return params

    async def send(self, params: dict[str, Any], on_text: TextSink | None = None) -> Any:
        """One call: the body encoded once, sent by the SDK client's `post`; streamed and
        folded when `params` say `stream`, else read whole.

        The client still does the retries, auth, headers and error statuses;
        `messages.create` would first deep-copy every request (the whole
        history, on every call) into a fresh tree and encode that: ~40 % of an
        iteration's CPU in a long turn (bench/NOTES.md, A-wire).
        """
        stream = bool(params.get("stream"))
        headers = {"content-type": "application/json", **params.get("extra_headers", {})}
        response = await self.client.post(
            "/v1/messages",
            cast_to=httpx2.Response,
            content=_encoded(params),
            options={"headers": headers, "timeout": params["timeout"]},
            stream=stream,
        )
        if stream:
            return await sdk.folded(response, MessageFold(on_text))
        return sdk.json_body(response.content)

    def compacting_on_server(self, trigger: int | None = None) -> AnthropicProvider:
        """This provider asking the API to compact the conversation itself once a request's
        input passes `trigger` tokens (the API's default without one): the beta
        `compact-2026-01-12` and its `compact_20260112` edit. The reply's `compaction` block
        is appended like any other, and its stop reason continues the turn."""
        other = copy.copy(self)
        edit: dict[str, Any] = {"type": "compact_20260112"}
        if trigger is not None:
            edit["trigger"] = {"type": "input_tokens", "value": trigger}
        other.extra_body = {**self.extra_body, "context_management": {"edits": [edit]}}
        if SERVER_COMPACTION_BETA not in self.betas:
            other.betas = [*self.betas, SERVER_COMPACTION_BETA]
        other.server_compaction = trigger or 0
        return other

    def describe(self) -> dict[str, Any]:
        described = self._described()
        if self.server_compaction is not None:
            described["server_compaction"] = self.server_compaction
        return described

    def _described(self) -> dict[str, Any]:
        return {
            "provider": "anthropic",
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system_of(self.system),
            "server_tools": self.server_tools,
            "mcp_servers": [_without_secrets(s) for s in self.mcp_servers],
            "betas": self.betas,
            "stream": self.stream,
            "prompt_cache": self.cache_ttl,
            "cache_breakpoints": list(cache_marks.PLACES) if self.cache_ttl else [],
            "base_url": redact_url(str(self.client.base_url)),
            "max_retries": self.max_retries,
        }


def _keep_secrets(client: anthropic.AsyncAnthropic, mcp_servers: list[dict[str, Any]]) -> None:
    """The key, the base URL's credentials and the MCP servers' tokens: a server may echo
    them in an error, and every error message, log line and span hides them."""
    keep_secret(client.api_key, client.auth_token)
    keep_url_secrets(str(client.base_url))
    for server in mcp_servers:
        keep_secret(server.get("authorization_token"))
        keep_url_secrets(server.get("url"))


def _http_client(transport: httpx2.AsyncBaseTransport | None) -> httpx2.AsyncClient:
    """The SDK's default HTTP client (its limits, keep-alive) with the attempt hooks."""
    hooks = event_hooks(REQUEST_ID_HEADER)
    if transport is None:  # the SDK sets its socket options only when no transport is given
        return anthropic.DefaultAsyncHttpxClient(event_hooks=hooks)
    return anthropic.DefaultAsyncHttpxClient(event_hooks=hooks, transport=transport)


def _encoded(params: Mapping[str, Any]) -> bytes:
    """The JSON body of `messages.create(**params)`, encoded as the SDK encodes it."""
    body = {k: v for k, v in params.items() if k not in _OPTIONS}
    body.update(params.get("extra_body") or {})
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def _without_secrets(server: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in server.items() if k != "authorization_token"}
    if isinstance(kept.get("url"), str):
        kept["url"] = redact_url(kept["url"])
    return kept
