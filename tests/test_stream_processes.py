"""The event stream across processes on PostgreSQL (issue 28): `serve --no-worker` streams
what a separate `turnkeeper worker` writes, woken by LISTEN/NOTIFY, against a fake
Messages API; and a `serve` that stops ends its open streams cleanly."""

from __future__ import annotations

import asyncio
import signal
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.scripts import answer, asks, tool_use
from tests.sse import read_stream
from tests.test_resume import APP, Api, model_env, served
from tests.test_server import output, turnkeeper, until_up


@pytest.mark.postgres
async def test_serve_streams_what_a_worker_process_writes(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    script = [
        asks(tool_use("delete_file", {"path": "notes.txt"}, id="toolu_del"), say="Deleting."),
        answer("Your notes are gone."),
        asks(tool_use("delete_file", {"path": "b.txt"}, id="toolu_b")),
    ]
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        _, env = stack.enter_context(model_env(script, tmp_path / "tools.log"))
        base, (api_process, serve_log) = served(stack, url, env, tmp_path)
        await until_up(base, api_process, serve_log)
        worker_log = tmp_path / "worker.log"
        stack.enter_context(turnkeeper("worker", *APP, "--database", url, log=worker_log, env=env))
        api = Api(base)
        turn_id = await api.ask("delete my notes")
        first = await read_stream(base, turn_id, api.auth)
        assert first.types[0] == "turn.started", output(worker_log)
        assert first.types[-2:] == ["approval.requested", "turn.waiting"]
        cursor = {"last-event-id": str(first.ids[-1])}
        # Connected before the turn resumes: woken by the worker's NOTIFY, not a poll.
        rest = asyncio.create_task(read_stream(base, turn_id, api.auth, headers=cursor))
        await asyncio.sleep(0.5)  # connected (likely): if not, it reads from its cursor
        decided = await api.post(
            f"/api/turns/{turn_id}/approvals", {"tool_use_id": "toolu_del", "approved": True}
        )
        assert decided.status_code == 202
        after = await rest
        assert after.ended
        assert after.ids[0] == first.ids[-1] + 1
        assert after.types[0] == "turn.started"
        assert after.types[-1] == "turn.ended"
        assert after.events[-1]["data"]["outcome"] == "finished"
        final = await api.until(turn_id, done=True)
        said = final["messages"][-1]
        deltas = [
            e["data"]["delta"]
            for e in after.events
            if e["event"] == "text.delta" and e["data"]["message"] == said["id"]
        ]
        assert "".join(deltas) == said["text"] == "Your notes are gone."

        # A serve that stops ends the streams it holds open, cleanly.
        second = Api(base)
        waiting_id = await second.ask("delete b")
        ran = await read_stream(base, waiting_id, second.auth)
        assert ran.types[-1] == "turn.waiting"
        held = asyncio.create_task(
            read_stream(base, waiting_id, second.auth, headers={"last-event-id": str(ran.ids[-1])})
        )
        await asyncio.sleep(0.5)
        api_process.send_signal(signal.SIGTERM)
        ended = await asyncio.wait_for(held, 30)
        assert ended.ended, output(serve_log)
        assert ended.events == []
