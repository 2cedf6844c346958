"""Any OpenAI-compatible Chat Completions server through the official `openai` SDK.

One adapter per wire format, not per vendor: `base_url` points it at OpenAI,
vLLM, a llama.cpp server or Ollama alike. The assistant message appended to the
history is `choices[0].message` read from the raw HTTP body, exactly as sent.

SDK exceptions become turnkeeper errors in one place, `provider_error()`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
import openai

from ..credentials import redact_logger, redact_url
from ..errors import ProviderError, ProviderFailed, ProviderUnavailable
from ..wire import Message, Reply, ToolResult, ToolSpec
from . import chat_api
from .attempts import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MIN_ATTEMPT,
    Attempts,
    event_hooks,
    root_cause,
)

DEFAULT_MODEL = "gpt-4.1-mini"
REQUEST_ID_HEADER = "x-request-id"

# The SDK and its HTTP client log request URLs, credentials and all.
for _logger in ("openai._base_client", "httpx2"):
    redact_logger(_logger)


class OpenAIProvider:
    """A Chat Completions model; history in that wire format."""

    wire = chat_api.WIRE

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int | None = None,
        system: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        min_attempt: float = DEFAULT_MIN_ATTEMPT,
    ) -> None:
        """`api_key` and `base_url` default to the SDK's `OPENAI_API_KEY` and `OPENAI_BASE_URL`.

        `max_tokens` is sent only when given (servers differ on its default);
        `extra_body` is merged into every request as is.
        """
        self.model = model
        self.max_tokens = max_tokens
        self.system = system
        self.extra_body = dict(extra_body or {})
        self.max_retries = max_retries
        self.min_attempt = min_attempt
        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks=event_hooks(REQUEST_ID_HEADER)),
        )

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        params = self.request(history, tools, timeout)
        with Attempts.opened(timeout, self.max_retries, min_attempt=self.min_attempt) as attempts:
            try:
                async with asyncio.timeout(timeout - min(0.25, timeout / 20)):
                    raw = await self.client.chat.completions.with_raw_response.create(**params)
                    content = await raw.http_response.aread()
            except TimeoutError as e:
                raise attempts.error(
                    ProviderUnavailable, f"no complete response within the call's {timeout:.1f} s"
                ) from e
            except Exception as e:
                raise provider_error(e, attempts) from e
            return _parsed(content, attempts)

    def request(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> dict[str, Any]:
        """The keyword arguments of one `chat.completions.create` call."""
        system = [{"role": "system", "content": self.system}] if self.system else []
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
        return params

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self.client.close()

    def user_message(self, text: str) -> Message:
        return chat_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return chat_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {
            "provider": "openai",
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": self.system,
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


def provider_error(e: Exception, attempts: Attempts) -> ProviderError:
    """The turnkeeper error for anything the SDK (or its HTTP client) raised."""
    if isinstance(e, ProviderError):  # the response itself said what went wrong
        error = attempts.error(type(e), str(e), status=e.status)
    elif isinstance(e, openai.APIStatusError):
        error = _from_status(e, attempts)
    elif isinstance(e, openai.APIConnectionError | httpx2.TransportError):
        error = attempts.error(ProviderUnavailable, f"connection failed: {root_cause(e)}")
    else:
        error = attempts.error(ProviderFailed, f"{type(e).__name__}: {e}")
    return error


def _from_status(e: openai.APIStatusError, attempts: Attempts) -> ProviderError:
    body = e.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict) and ("message" in body or "code" in body):
        described = chat_api.error_from_body({"error": body}, e.status_code)
        message, unavailable = str(described), isinstance(described, ProviderUnavailable)
    else:
        message, unavailable = f"HTTP {e.status_code}: {e.message}", False
    return attempts.status_error(message, e.status_code, e.request_id, unavailable=unavailable)


def _parsed(content: bytes, attempts: Attempts) -> Reply:
    try:
        body = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise attempts.error(ProviderFailed, f"the response body is not JSON: {e}") from e
    try:
        return chat_api.parse_reply(body)
    except ProviderError as e:
        raise attempts.error(type(e), str(e)) from e
