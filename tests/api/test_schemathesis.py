"""The API describes itself truly (issue 52.6): schemathesis, every check and every phase
(coverage, fuzzing, stateful), against the app served over real HTTP in both modes
(tokens, and signed-in users), with turns run by the offline demo model so every stream
ends. Bounded in examples so it runs in well under a minute.

One exemption, stated in the config below: the protocols' bodies carry a client's whole
history, of which the handler reads only the newest message; JSON Schema cannot say
"the newest", so the document requires of every message what is required of it, and a
schema-violating older message is accepted by design (`negative_data_rejection` is off
for `/api/ag-ui` and `/api/chat` alone; every other check runs there)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

from starlette.requests import Request

from tests.sse import live
from turnkeeper.api import create_app
from turnkeeper.providers.demo import DemoProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store.sqlite import SqliteStore

CONFIG = """
[checks]
enabled = true

[[operations]]
include-path-regex = "^/api/(ag-ui|chat)$"
checks.negative_data_rejection.enabled = false
"""
EXAMPLES = 3
SEED = 52


def by_header(request: Request) -> str | None:
    return request.headers.get("x-user")


async def checked(tmp: Path, authenticate: Callable[[Request], str | None] | None) -> str:
    """schemathesis's report on the app in one mode; raises if it found anything."""
    store = SqliteStore(tmp / "api.db")
    await store.migrate()
    queue = LocalQueue(TurnJob(store, DemoProvider()))
    app = create_app(store, queue, authenticate=authenticate)
    (tmp / "schemathesis.toml").write_text(CONFIG)
    signed_in = ["-H", "x-user: ann"] if authenticate is not None else []
    try:
        async with live(app) as base:
            process = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "schemathesis.cli"),
                *("--config-file", str(tmp / "schemathesis.toml"), "--no-color", "run"),
                *(f"{base}/openapi.json", "--max-examples", str(EXAMPLES), "--seed", str(SEED)),
                *signed_in,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=tmp,
            )
            out, _ = await asyncio.wait_for(process.communicate(), 120)
    finally:
        await queue.close()
        await store.close()
    report = out.decode(errors="replace")
    assert process.returncode == 0, report[-6000:]
    return report


async def test_schemathesis_finds_nothing_with_tokens_or_signed_in_users(tmp_path: Path) -> None:
    (tmp_path / "tokens").mkdir()
    (tmp_path / "users").mkdir()
    reports = await asyncio.gather(
        checked(tmp_path / "tokens", None), checked(tmp_path / "users", by_header)
    )
    for report in reports:
        assert "Stateful" in report, "every phase ran"
        assert "Coverage" in report
        assert " passed" in report
