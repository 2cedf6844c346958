"""pydantic-ai `Agent.run` on its `AnthropicModel`, over HTTP to the billing fake.

The prompt-cache workload's two turns (`cache_turn`), with pydantic-ai's
defaults (it sends no `cache_control`), or with its Anthropic caching settings
on: `anthropic_cache_instructions` and `anthropic_cache_tool_definitions`
(breakpoints on the system prompt and the last tool) and `anthropic_cache`
(the API's top-level automatic caching, which moves a breakpoint to the last
block as the conversation grows).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.usage import UsageLimits

from .. import cache_turn

SETTINGS: dict[str, AnthropicModelSettings | None] = {
    "default": None,
    "cache": AnthropicModelSettings(
        anthropic_cache=True,
        anthropic_cache_instructions=True,
        anthropic_cache_tool_definitions=True,
    ),
}
"""The workload's variants: the agent's `model_settings`."""


def tools() -> list[Tool[None]]:
    async def read(page: int) -> str:
        return cache_turn.page(page)

    return [
        Tool(read, name=name, description=cache_turn.description(name))
        for name in cache_turn.TOOL_NAMES
    ]


async def turns(base_url: str, variant: str, iterations: int) -> dict[str, Any]:
    """Both questions, one after the other in one conversation; the model calls of each."""
    client = AnthropicProvider(api_key=cache_turn.KEY, base_url=base_url)
    agent = Agent(
        AnthropicModel(cache_turn.MODEL, provider=client),
        instructions=cache_turn.instructions(),
        tools=tools(),
        model_settings=SETTINGS[variant],
    )
    history: list[ModelMessage] | None = None
    calls = []
    for question in cache_turn.QUESTIONS:
        result = await agent.run(
            question, message_history=history, usage_limits=UsageLimits(request_limit=iterations)
        )
        history = result.all_messages()
        calls.append(result.usage.requests)
    return {"calls": calls}
