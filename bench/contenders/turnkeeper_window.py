"""turnkeeper's conversation as a served assistant runs it: `TurnJob`, SQLite, defaults.

The compaction workload's turns (`window_turn`), each a queued turn of one
conversation run by `TurnJob.run` with `AnthropicProvider` over HTTP to the
windowed fake, compaction at its defaults (`Compaction()`: the model's window
from the table, compacted before a request passes 0.75 of it, and on a refusal
the window the refusal states is kept for the turns after). Every turn is run,
whatever the one before it ended with.
"""

from __future__ import annotations

import tempfile
from typing import Any

from turnkeeper import Outcome
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import new_token
from turnkeeper.store.sqlite import SqliteStore
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import ToolSpec

from .. import window_turn
from .turnkeeper_loop import quiet


async def conversation(base_url: str, turns: int) -> dict[str, Any]:
    """All `turns` turns; how many finished, and the outcome of the first that did not."""
    provider = AnthropicProvider(
        model=window_turn.MODEL, api_key=window_turn.KEY, base_url=base_url
    )
    spec = ToolSpec(window_turn.TOOL, window_turn.DESCRIPTION)
    tools = FunctionToolset([Tool(spec, lambda arguments: window_turn.notes())])
    finished, failure = 0, None
    with tempfile.TemporaryDirectory(prefix="turnkeeper-bench-") as folder:
        store = SqliteStore(f"{folder}/bench.db")
        await store.migrate()
        job = TurnJob(store, provider, tools, reporter=quiet)
        conversation_id = await store.create_conversation(new_token()[1])
        try:
            for n in range(1, turns + 1):
                queued = await store.create_turn(conversation_id, window_turn.question(n))
                outcome = await job.run(queued.turn_id)
                if outcome is Outcome.FINISHED:
                    finished += 1
                elif failure is None:
                    failure = f"turn {n}: {outcome}"
        finally:
            await store.close()
            await provider.aclose()
    return {"finished": finished, "failure": failure}
