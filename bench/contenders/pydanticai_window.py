"""pydantic-ai `Agent.run` on its `AnthropicModel`, over HTTP to the windowed fake.

The compaction workload's turns (`window_turn`) with pydantic-ai's defaults:
each turn is `agent.run(question, message_history=...)` with the messages of
the turns before it, as its documentation keeps a conversation going. It has
no step that keeps the history inside the model's window, so the conversation
stops at the first refusal.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from .. import window_turn


async def conversation(base_url: str, turns: int) -> dict[str, Any]:
    """Turns until the first that fails: how many finished, and why it stopped."""
    client = AnthropicProvider(api_key=window_turn.KEY, base_url=base_url)

    async def read() -> str:
        return window_turn.notes()

    tool = Tool(read, name=window_turn.TOOL, description=window_turn.DESCRIPTION)
    agent = Agent(AnthropicModel(window_turn.MODEL, provider=client), tools=[tool])
    history: list[ModelMessage] = []
    for n in range(1, turns + 1):
        try:
            result = await agent.run(window_turn.question(n), message_history=history)
        except Exception as e:
            return {"finished": n - 1, "failure": f"turn {n}: {type(e).__name__}: {e}"[:300]}
        history = result.all_messages()
    return {"finished": turns, "failure": None}
