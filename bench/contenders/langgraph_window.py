"""langgraph `create_react_agent` on langchain-openai's `ChatOpenAI`, over HTTP to the
windowed fake.

The compaction workload's turns (`window_turn`) with langgraph's defaults: the
conversation is a thread of an `InMemorySaver` checkpointer, each turn one
`ainvoke` with the new question, as its documentation keeps one going. The
prebuilt agent has no step that keeps the messages inside the model's window
(a `pre_model_hook` would have to be written), so the conversation stops at the
first refusal (`context_length_exceeded`).
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from .. import window_turn


async def conversation(base_url: str, turns: int) -> dict[str, Any]:
    """Turns until the first that fails: how many finished, and why it stopped."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.prebuilt import create_react_agent

    async def read() -> str:
        return window_turn.notes()

    tool = StructuredTool.from_function(
        coroutine=read, name=window_turn.TOOL, description=window_turn.DESCRIPTION
    )
    chat = ChatOpenAI(
        model=window_turn.CHAT_MODEL, base_url=f"{base_url}/v1", api_key=SecretStr(window_turn.KEY)
    )
    graph = create_react_agent(chat, [tool], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "bench"}}
    for n in range(1, turns + 1):
        try:
            await graph.ainvoke({"messages": [("user", window_turn.question(n))]}, config=config)
        except Exception as e:
            return {"finished": n - 1, "failure": f"turn {n}: {type(e).__name__}: {e}"[:300]}
    return {"finished": turns, "failure": None}
