"""turnkeeper's `run_turn` through its Anthropic adapter over the mock API.

The adapter builds its own `AsyncAnthropic` client (with its attempt hooks on
the HTTP client); `transport=` puts the mock under it, so it pays the same SDK
serialisation, HTTP client and response parsing as the tool runner.
"""

from __future__ import annotations

from turnkeeper import Budget, LocalHooks, Outcome, run_turn
from turnkeeper.providers.anthropic import AnthropicProvider

from .. import fake
from .mock_api import BASE_URL, KEY, MockMessagesApi
from .turnkeeper_loop import quiet, toolset


def make(spec: fake.Spec) -> fake.Turn:
    server = MockMessagesApi(spec)
    adapter = AnthropicProvider(
        api_key=KEY,
        base_url=BASE_URL,
        model=fake.MODEL,
        max_tokens=1024,
        max_retries=0,
        transport=server.transport(),
        stream=False,  # the mock API answers whole bodies, as the tool runner it is measured with
    )
    tools = toolset(spec)
    budget = Budget(max_iterations=spec.calls, deadline=3600.0, call_timeout=600.0)

    async def turn() -> Outcome:
        server.step = 0
        result = await run_turn(
            "go", provider=adapter, toolset=tools, budget=budget, hooks=LocalHooks(quiet)
        )
        assert result.outcome is Outcome.FINISHED, result.outcome
        assert server.step == spec.calls, server.step
        return result.outcome

    return turn
