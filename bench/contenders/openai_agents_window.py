"""openai-agents `Runner.run` on `OpenAIChatCompletionsModel`, over HTTP to the windowed fake.

The compaction workload's turns (`window_turn`) with the SDK's defaults: each
turn is `Runner.run(agent, history + [question])`, the history being the
previous run's `to_input_list()`, as its documentation keeps a conversation
going by hand. Nothing in it keeps the history inside the model's window, so
the conversation stops at the first refusal (`context_length_exceeded`).
"""

from __future__ import annotations

from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from .. import window_turn


async def conversation(base_url: str, turns: int) -> dict[str, Any]:
    """Turns until the first that fails: how many finished, and why it stopped."""
    set_tracing_disabled(True)

    @function_tool(name_override=window_turn.TOOL, description_override=window_turn.DESCRIPTION)
    async def read() -> str:
        return window_turn.notes()

    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=window_turn.KEY)
    model = OpenAIChatCompletionsModel(model=window_turn.CHAT_MODEL, openai_client=client)
    agent = Agent(name="bench", model=model, tools=[read])
    config = RunConfig(tracing_disabled=True)
    history: list[Any] = []
    for n in range(1, turns + 1):
        asked = [*history, {"role": "user", "content": window_turn.question(n)}]
        try:
            result = await Runner.run(agent, asked, run_config=config)
        except Exception as e:
            return {"finished": n - 1, "failure": f"turn {n}: {type(e).__name__}: {e}"[:300]}
        history = result.to_input_list()
    return {"finished": turns, "failure": None}
