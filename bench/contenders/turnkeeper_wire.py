"""turnkeeper's `run_turn` through its Anthropic adapter over the mock API.

SLOT: `turnkeeper.providers.anthropic.AnthropicProvider` lives on the adapter
branch (issue 3). Until it is merged this contender reports `PENDING` and the
A-wire row says so. Once merged, check the constructor call in `provider()`
against the adapter's signature; nothing else here should need to change.
"""

from __future__ import annotations

from typing import Any

from turnkeeper import Budget, LocalHooks, Outcome, run_turn

from .. import fake
from .turnkeeper_loop import quiet, toolset

try:
    from turnkeeper.providers.anthropic import AnthropicProvider
except ImportError:
    PENDING: str | None = "pending: adapter not on this branch"
else:
    PENDING = None


def provider(client: Any) -> Any:
    """The adapter over `client` (an `anthropic.AsyncAnthropic`)."""
    return AnthropicProvider(client=client, model=fake.MODEL)


def make(spec: fake.Spec) -> fake.Turn:
    if PENDING:
        raise RuntimeError(PENDING)
    from .mock_api import MockMessagesApi  # loads the anthropic SDK

    server = MockMessagesApi(spec)
    adapter = provider(server.client())
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
