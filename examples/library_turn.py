"""A library turn with a Python tool: the model asks for the weather, the tool answers.

    .venv/bin/python examples/library_turn.py          # offline: a scripted model
    .venv/bin/python examples/library_turn.py --real   # the model the environment selects
                                                       # (ANTHROPIC_API_KEY or OPENAI_BASE_URL)

Needs turnkeeper alone; `--real` needs the SDK of the model selected (the anthropic or
openai extra, both in `server`). A missing key or extra is one line (exit 2).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from turnkeeper import Budget, LocalHooks, Outcome, ScriptedProvider, run_turn
from turnkeeper.errors import ConfigError
from turnkeeper.providers import Provider
from turnkeeper.providers.select import choose_provider
from turnkeeper.tools.functions import FunctionToolset, ToolRefused, tool

QUESTION = "What's the weather in Madrid for the next two days?"


@tool
async def get_weather(city: str, days: int = 1) -> str:
    """Forecast for a city.

    Args:
        city: the city's name, e.g. "Madrid"
        days: how many days ahead
    """
    if days > 7:
        raise ToolRefused("days must be 7 or fewer")  # the model reads this and can try again
    return f"{city}: sunny for the next {days} days"


def response(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    """A Messages API response body, as the API sends it."""
    return {
        "id": "msg_example",
        "type": "message",
        "role": "assistant",
        "model": "scripted",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 10},
    }


SCRIPT = [
    response(
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Madrid", "days": 2},
            }
        ],
        "tool_use",
    ),
    response([{"type": "text", "text": "Sunny in Madrid for the next two days."}], "end_turn"),
]


async def main(provider: Provider) -> None:
    result = await run_turn(
        QUESTION,
        provider=provider,
        toolset=FunctionToolset([get_weather]),
        budget=Budget(max_iterations=5, deadline=60),
        hooks=LocalHooks(),
    )
    results = [
        block["content"]
        for message in result.history
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    print(f"tool said: {results}")
    print(f"outcome: {result.state.status}")
    if result.outcome is Outcome.FINISHED:
        print(f"answer: {result.state.messages[-1].text}")


if __name__ == "__main__":
    real = "--real" in sys.argv[1:]
    try:
        chosen = choose_provider(None, None, os.environ) if real else ScriptedProvider(SCRIPT)
    except ConfigError as e:  # a missing key or extra: say which
        print(f"library_turn.py: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    asyncio.run(main(chosen))
