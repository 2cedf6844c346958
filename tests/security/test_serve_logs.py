"""`turnkeeper serve` with a key and a base URL that carries credentials: its log (uvicorn's,
the SDK's, httpx's and turnkeeper's records, at INFO), in text or JSON lines, holds neither.

The model is a `WireServer` answering with a CONSTRUCTED Messages API body,
then a CONSTRUCTED 502 whose text echoes the URL the way a proxy's page does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.providers.wire_server import Canned, serving
from tests.scripts import answer
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import eventually

from .test_secrets import API_KEY, PASSWORD, assert_no_secret


async def one_turn(base: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base) as client:
        created = (await client.post("/api/conversations")).json()
        auth = {"authorization": f"Bearer {created['token']}"}
        path = f"/api/conversations/{created['conversation_id']}/turns"
        turn_id = (await client.post(path, json={"text": "hi"}, headers=auth)).json()["turn_id"]
        states: list[dict[str, Any]] = []

        async def done() -> bool:
            states.append((await client.get(f"/api/turns/{turn_id}", headers=auth)).json())
            return bool(states[-1]["done"])

        await eventually(done, "the turn finishing", bound=30)
        return states[-1]


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_serve_logs_no_key_and_no_url_credentials(tmp_path: Path, log_format: str) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with serving() as model:
        url = f"http://user:{PASSWORD}@127.0.0.1:{model.port}"
        page = f"Bad gateway: {url}/v1/messages did not answer".encode()
        model.add(
            Canned(200, json.dumps(answer("hello")).encode(), {"content-type": "application/json"}),
            *[Canned(502, page, {"content-type": "text/plain"})] * 3,
        )
        env = {**os.environ, "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": url}
        database = f"sqlite:///{tmp_path / 'tk.db'}"
        args = (
            "serve", "--provider", "anthropic", "--database", database, "--port", str(port),
            "--log-format", log_format,
        )  # fmt: skip
        with turnkeeper(*args, log=log, env=env) as server:
            base = f"http://127.0.0.1:{port}"
            await until_up(base, server, log)
            first, second = await one_turn(base), await one_turn(base)
    assert first["status"] == "finished"
    assert second["status"] == "failed"
    written = output(log)
    assert "HTTP Request: POST http://user:***@127.0.0.1" in written, written
    assert "Bad gateway" in written, "the failure is logged, redacted"
    assert_no_secret("the serve log", written)
    if log_format == "json":
        records = [json.loads(line) for line in written.splitlines() if line.strip()]
        assert any(r["logger"] == "turnkeeper.report" for r in records), "the failure's report"
        report = next(r for r in records if r["logger"] == "turnkeeper.report")
        assert report["outcome"] == "failed"
        assert "127.0.0.1" in report["message"], "the report's text is kept, redacted"
