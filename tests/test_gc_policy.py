"""`serve`'s GC policy: garbage is still collected, in larger batches, so memory stays bounded.

The turns run in a subprocess (the policy freezes and retunes the whole
interpreter), through `LocalQueue` and `TurnJob` on a SQLite store, as under
`turnkeeper serve`. Their tool leaves reference cycles behind, garbage that
only the cyclic collector frees, far more of it in all than the bounds: the
cycles waiting to be freed, counted exactly, stay within one young collection's
batch, and the resident memory under a bound, only if the collector keeps running.
The memory bound is loose (the allocator's own reuse of freed memory varies from
run to run: a CI run once grew 102 MB where a quiet machine grows 60 MB); the count
is the policy's exact promise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from turnkeeper.service import gc_policy

REPO = Path(__file__).resolve().parents[1]
TURNS = 3000
CYCLES_PER_TURN = 200
CYCLE_BYTES = 1024

TURNS_UNDER_THE_POLICY = textwrap.dedent(
    f"""
    import asyncio, gc, json, sys, tempfile
    from pathlib import Path
    from turnkeeper.service import gc_policy
    from turnkeeper.service.job import TurnJob
    from turnkeeper.providers.demo import DemoProvider
    from turnkeeper.service.queue import LocalQueue
    from turnkeeper.store import new_token
    from turnkeeper.store.sqlite import SqliteStore
    from turnkeeper.tools.functions import FunctionToolset, Tool
    from turnkeeper.wire import ToolSpec

    class Cycle:  # a container that refers to itself, holding a buffer; counted alive
        __slots__ = ("buffer", "me")
        alive = peak = 0

        def __init__(self):
            self.buffer, self.me = bytes({CYCLE_BYTES}), self
            Cycle.alive += 1
            Cycle.peak = max(Cycle.peak, Cycle.alive)

        def __del__(self):
            Cycle.alive -= 1

    def leaves_cycles(args):
        for _ in range({CYCLES_PER_TURN}):
            Cycle()
        return "buy milk"

    def rss_kb():
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

    async def main():
        with tempfile.TemporaryDirectory() as folder:
            store = SqliteStore(folder + "/t.db")
            await store.migrate()
            tools = FunctionToolset([Tool(ToolSpec("read_file", "Read a file."), leaves_cycles)])
            queue = LocalQueue(TurnJob(store, DemoProvider(), tools), concurrency=50)
            gc_policy.apply()
            before = gc.get_stats()[0]["collections"]
            rss = [rss_kb()]
            for _ in range({TURNS} // 100):
                for _ in range(100):
                    conversation_id = await store.create_conversation(new_token()[1])
                    turn = await store.create_turn(conversation_id, "what's on my todo list?")
                    await queue.enqueue(turn.turn_id)
                await queue.join()
                rss.append(rss_kb())
            counts = await store.counts()
            await store.close()
        young = gc.get_stats()[0]["collections"] - before
        found = {{"rss_kb": rss, "counts": counts, "young_collections": young}}
        print(json.dumps(found | {{"peak_cycles": Cycle.peak}}))

    asyncio.run(main())
    """
)


def test_memory_stays_bounded_under_the_policy() -> None:
    run = subprocess.run(
        [sys.executable, "-c", TURNS_UNDER_THE_POLICY],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout)
    assert found["counts"] == {"finished": TURNS}
    assert found["young_collections"] > 0, "the collector ran under the policy"
    # Between two young collections at most YOUNG new containers wait to be freed.
    made = TURNS * CYCLES_PER_TURN
    assert made > 5 * gc_policy.YOUNG, "without collection the cycles would pass the bound"
    assert found["peak_cycles"] <= 1.2 * gc_policy.YOUNG, found["peak_cycles"]
    bound_kb = made * CYCLE_BYTES / 1024 / 3
    growth = max(found["rss_kb"]) - found["rss_kb"][0]
    assert growth <= bound_kb, found["rss_kb"]
