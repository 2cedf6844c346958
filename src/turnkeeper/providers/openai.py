"""Any OpenAI-compatible Chat Completions server through the official `openai` SDK.

One adapter per wire format, not per vendor: `base_url` points it at OpenAI,
vLLM, a llama.cpp server or Ollama alike. The assistant message appended to the
history is `choices[0].message` exactly as sent: calls stream by default
(`stream: true` with `stream_options.include_usage`, so the last chunk carries
the usage), and `chat_stream` folds the raw chunks into the `chat.completion`
body a plain call returns, the answer's `delta.content` going to `on_text` as
it comes; `stream=False` opts out, and the body is read raw from the HTTP
response.

The call, its timeout and the SDK's exceptions are `sdk.SdkProvider`'s, shared
with the Anthropic adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import openai

from ..credentials import keep_secret, keep_url_secrets, redact_logger, redact_url
from ..errors import ProviderError
from ..wire import Message, ToolSpec
from . import MAX_RESPONSE, TextSink, chat_api, sdk, system_of
from .attempts import DEFAULT_MAX_RETRIES, DEFAULT_MIN_ATTEMPT, event_hooks
from .chat_stream import ChatFold

DEFAULT_MODEL = "gpt-4.1-mini"
REQUEST_ID_HEADER = "x-request-id"
STREAM_OPTIONS = {"include_usage": True}
"""A streamed call asks for the usage: the last chunk carries it, as a plain body does."""

# The SDK and its HTTP client log request URLs, credentials and all.
for _logger in ("openai._base_client", "httpx2"):
    redact_logger(_logger)


def _error_body(body: object, status: int) -> ProviderError | None:
    """The error a Chat Completions error body (`{"error": {...}}` or its inside) describes."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict) and ("message" in body or "code" in body):
        return chat_api.error_from_body({"error": body}, status)
    return None


ERRORS = sdk.SdkErrors(
    openai.APIStatusError, openai.APIConnectionError, openai.APITimeoutError, _error_body
)


class OpenAIProvider(sdk.SdkProvider):
    """A Chat Completions model; history in that wire format."""

    wire = chat_api.WIRE
    errors = ERRORS

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int | None = None,
        system: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        stream: bool = True,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        min_attempt: float = DEFAULT_MIN_ATTEMPT,
        max_response: int = MAX_RESPONSE,
    ) -> None:
        """`api_key` and `base_url` default to the SDK's `OPENAI_API_KEY` and `OPENAI_BASE_URL`.

        `max_tokens` is sent only when given (servers differ on its default);
        `extra_body` is merged into every request as is. `stream=False` makes plain
        calls (the request has no `stream` field). `max_response`: the most content a
        response may hold, in bytes (default 4 MiB).
        """
        self.model = model
        self.max_response = max_response
        self.max_tokens = max_tokens
        self.system = system
        self.extra_body = dict(extra_body or {})
        self.stream = stream
        self.max_retries = max_retries
        self.min_attempt = min_attempt
        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks=event_hooks(REQUEST_ID_HEADER)),
        )
        # A server may echo them in an error; every error message, log line and span hides them.
        keep_secret(self.client.api_key)
        keep_url_secrets(str(self.client.base_url))

    async def send(self, params: dict[str, Any], on_text: TextSink | None = None) -> Any:
        """One call; the JSON body exactly as the server sent it, or as its stream folds."""
        if params.get("stream"):
            create = self.client.chat.completions.with_streaming_response.create
            async with create(**params) as response:
                return await sdk.folded(response.http_response, ChatFold(on_text))
        raw = await self.client.chat.completions.with_raw_response.create(**params)
        return sdk.json_body(await raw.http_response.aread())

    def request(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> dict[str, Any]:
        """The keyword arguments of one `chat.completions.create` call."""
        own = system_of(self.system)
        system = [{"role": "system", "content": own}] if own else []
        params: dict[str, Any] = {
            "model": self.model,
            "messages": system + list(history),
            "timeout": timeout,
        }
        if tools:
            params["tools"] = [function_tool(t) for t in tools]
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.extra_body:
            params["extra_body"] = self.extra_body
        if self.stream:
            params["stream"] = True
            params["stream_options"] = dict(STREAM_OPTIONS)
        return params

    def describe(self) -> dict[str, Any]:
        return {
            "provider": "openai",
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system_of(self.system),
            "stream": self.stream,
            "base_url": redact_url(str(self.client.base_url)),
            "max_retries": self.max_retries,
        }


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    """A `ToolSpec` as a Chat Completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    }
