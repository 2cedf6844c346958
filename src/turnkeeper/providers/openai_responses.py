"""OpenAI's Responses API (and Responses-compatible servers) through the official `openai` SDK.

Stateless: every request says `store: false` and asks for
`reasoning.encrypted_content`, and sends the whole history as its `input` items
(`responses_api.input_items`), a response's output items verbatim, so a reasoning
model keeps its reasoning across every call of a turn and a crash resume without the
server keeping anything. The instructions go as `instructions`, the tools as function
tools, and `prompt_cache_key` names the conversation (its first item), so the calls of
one conversation land on the same cache.

Calls stream by default: the raw events fold into the body a plain call returns
(`responses_stream`), never through the SDK's `responses.stream()` helper, which raises
on an `incomplete` stream. `stream=False` makes plain calls, read raw from the HTTP
response. The call, its timeout and the SDK's exceptions are `sdk.SdkProvider`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from ..credentials import keep_secret, keep_url_secrets, redact_url
from ..wire import Message, ToolSpec
from . import MAX_RESPONSE, TextSink, responses_api, sdk, system_of
from .attempts import DEFAULT_MAX_RETRIES, DEFAULT_MIN_ATTEMPT, event_hooks
from .openai import ERRORS, REQUEST_ID_HEADER
from .responses_stream import ResponseFold

DEFAULT_MODEL = "gpt-5-mini"
INCLUDE = ("reasoning.encrypted_content",)
"""What every request asks back: the reasoning, encrypted, to be sent again next call."""


class OpenAIResponsesProvider(sdk.SdkProvider):
    """A model behind the Responses API; history in that wire format (`responses_api`)."""

    wire = responses_api.WIRE
    errors = ERRORS

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int | None = None,
        system: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        stream: bool = True,
        prompt_cache: bool | str = True,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        min_attempt: float = DEFAULT_MIN_ATTEMPT,
        max_response: int = MAX_RESPONSE,
    ) -> None:
        """`api_key` and `base_url` default to the SDK's `OPENAI_API_KEY` and `OPENAI_BASE_URL`.

        `max_tokens` is sent as `max_output_tokens` when given; `extra_body` is merged
        into every request as is (`reasoning`, `text`...). `prompt_cache=False` sends no
        `prompt_cache_key`. `max_response`: the most content a response may hold, in bytes.
        """
        self.model = model
        self.max_response = max_response
        self.max_tokens = max_tokens
        self.system = system
        self.extra_body = dict(extra_body or {})
        self.stream = stream
        self.prompt_cache = prompt_cache is not False
        self.max_retries = max_retries
        self.min_attempt = min_attempt
        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks=event_hooks(REQUEST_ID_HEADER)),
        )
        keep_secret(self.client.api_key)
        keep_url_secrets(str(self.client.base_url))

    async def send(self, params: dict[str, Any], on_text: TextSink | None = None) -> Any:
        """One call; the JSON body exactly as the server sent it, or as its stream folds."""
        if params.get("stream"):
            create = self.client.responses.with_streaming_response.create
            async with create(**params) as response:
                return await sdk.folded(response.http_response, ResponseFold(on_text))
        raw = await self.client.responses.with_raw_response.create(**params)
        return sdk.json_body(await raw.http_response.aread())

    def request(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> dict[str, Any]:
        """The keyword arguments of one `responses.create` call."""
        items = responses_api.input_items(history)
        params: dict[str, Any] = {
            "model": self.model,
            "input": items,
            "store": False,
            "include": list(INCLUDE),
            "timeout": timeout,
        }
        instructions = system_of(self.system)
        if instructions:
            params["instructions"] = instructions
        if tools:
            params["tools"] = [function_tool(t) for t in tools]
        if self.max_tokens is not None:
            params["max_output_tokens"] = self.max_tokens
        if self.prompt_cache and items:
            params["prompt_cache_key"] = cache_key(items[0])
        if self.extra_body:
            params["extra_body"] = self.extra_body
        if self.stream:
            params["stream"] = True
        return params

    def describe(self) -> dict[str, Any]:
        return {
            "provider": responses_api.NAME,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system_of(self.system),
            "stream": self.stream,
            "prompt_cache": self.prompt_cache,
            "base_url": redact_url(str(self.client.base_url)),
            "max_retries": self.max_retries,
        }


def cache_key(first: Mapping[str, Any]) -> str:
    """The conversation's `prompt_cache_key`: a digest of its first item (the first
    question), the same on every call of every turn of one conversation."""
    text = json.dumps(first, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "tk-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    """A `ToolSpec` as a Responses function tool (flat: no `function` object). Not strict:
    the API's default, strict, refuses any schema not written for it."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.input_schema,
        "strict": False,
    }
