"""One `turnkeeper worker` process of the scale-out workload, on the fake model.

    python -m bench.scale_worker DATABASE_URL CONCURRENCY

Runs what `turnkeeper worker` runs (`cmd_worker`: `gc_policy.apply()`, then
`server.work`: the procrastinate worker and the sweeper on the PostgreSQL
store) with B's fake model (6 calls of 50 ms a turn) and an assistant whose only
tool is the trivial one, in place of the app `turnkeeper worker APP` would load. Writes
`ready` and the CPU seconds start-up took on stdout once built
(imports included); on SIGTERM it stops like `turnkeeper worker`
and writes the number of model calls it made (so the workload can check that
every turn ran exactly once) and the CPU seconds it used.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Sequence

from turnkeeper import Assistant
from turnkeeper.service import gc_policy
from turnkeeper.service.worker import run_worker  # noqa: F401 - imported before start-up is measured
from turnkeeper.serving.server import work
from turnkeeper.serving.settings import Settings
from turnkeeper.wire import Message, Reply, ToolSpec

from .contenders.turnkeeper_loop import FakeProvider, as_provider, toolset
from .workloads.b_concurrency import SPEC


class CountingProvider(FakeProvider):
    """The fake model, counting the calls it answers."""

    calls = 0

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        reply = await super().complete(history, tools, timeout)
        CountingProvider.calls += 1
        return reply


def main(url: str, concurrency: int) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    settings = Settings(database=url, concurrency=concurrency)
    provider = as_provider(CountingProvider(SPEC))
    assistant = Assistant(tools=[toolset(SPEC)])
    gc_policy.apply()
    print(f"ready {time.process_time()}", flush=True)
    asyncio.run(work(settings, assistant, provider))
    print(f"calls {CountingProvider.calls} cpu {time.process_time()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
