"""What the two SDK adapters share: every timeout is one provider error with one message."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest

from turnkeeper.errors import ProviderUnavailable, timed_out
from turnkeeper.providers import anthropic as anthropic_adapter
from turnkeeper.providers import openai as openai_adapter
from turnkeeper.providers import sdk
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.attempts import Attempts
from turnkeeper.providers.openai import OpenAIProvider

from .conftest import Adapters
from .wire_server import Canned, WireServer

REQUEST = httpx2.Request("POST", "http://model.invalid/v1/messages")

TIMEOUTS = [
    TimeoutError(),
    httpx2.ReadTimeout("The read operation timed out", request=REQUEST),
    httpx2.ConnectTimeout("no time left in this model call", request=REQUEST),
]


@pytest.mark.parametrize(
    ("adapter", "raised"),
    [(anthropic_adapter.ERRORS, e) for e in [*TIMEOUTS, anthropic.APITimeoutError(REQUEST)]]
    + [(openai_adapter.ERRORS, e) for e in [*TIMEOUTS, openai.APITimeoutError(REQUEST)]],
    ids=lambda value: type(value).__name__,
)
def test_every_timeout_an_sdk_raises_is_unavailable_with_one_message(
    adapter: sdk.SdkErrors, raised: Exception
) -> None:
    with Attempts.opened(2.0, 0) as attempts:
        error = sdk.provider_error(adapter, raised, attempts, 2.0)
    assert type(error) is ProviderUnavailable
    assert str(error) == timed_out(2.0)


async def test_the_http_clients_read_timeout_through_the_sdk_is_that_error(
    adapters: Adapters,
) -> None:
    def times_out(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("The read operation timed out", request=request)

    transport = httpx2.MockTransport(times_out)
    adapter = adapters(AnthropicProvider, max_retries=0, transport=transport)
    with pytest.raises(ProviderUnavailable) as raised:
        await adapter.complete([{"role": "user", "content": "q"}], [], 3.0)
    assert str(raised.value) == timed_out(3.0)


async def test_a_server_that_never_answers_is_that_error_for_both_adapters(
    server: WireServer, adapters: Adapters
) -> None:
    server.add(Canned(hang=True), Canned(hang=True))
    both: list[AnthropicProvider | OpenAIProvider] = [
        adapters(AnthropicProvider, max_retries=0),
        adapters(OpenAIProvider, path="/v1", max_retries=0),
    ]
    messages: list[str] = []
    for adapter in both:
        with pytest.raises(ProviderUnavailable) as raised:
            await adapter.complete([{"role": "user", "content": "q"}], [], 0.5)
        messages.append(str(raised.value))
    assert messages == [timed_out(0.5)] * 2
