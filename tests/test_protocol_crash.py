"""A crashed and resumed turn read by the real clients (issue 52.3): the worker is killed
with SIGKILL mid-answer, another resumes the turn, and the message the `ai` client's
`readUIMessageStream` (and `@ag-ui/client`'s HttpAgent) ends with is exactly the final
state's text (the dead run's words withdrawn, never "w0 w1 w2 w0 w1 …"). PostgreSQL,
`serve --no-worker` and workers."""

from __future__ import annotations

import json
import os
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer
from tests.test_protocol_clients import CLIENTS, _until_up, pytestmark  # noqa: F401
from tests.test_resume import APP, served
from tests.test_server import turnkeeper

WORDS = " ".join(f"w{n}" for n in range(60))


def streamed(url: str) -> int:
    """The text deltas the turns have written so far."""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT count(*) FROM turn_events WHERE type = 'text.delta'").fetchone()
    return int(row[0]) if row is not None else 0


@pytest.mark.postgres
@pytest.mark.parametrize("scenario", ["chat_crash", "ag_ui_crash"])
def test_a_resumed_turn_ends_the_clients_message_with_what_stands(
    postgres_database: str, tmp_path: Path, scenario: str
) -> None:
    from tests.databases import fresh_schema

    flags = ["--lease", "1", "--resume-after-crash"]
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model = stack.enter_context(FakeModelServer([answer(WORDS), answer(WORDS)], gap=0.05))
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": model.url}
        base, (process, log) = served(stack, url, env, tmp_path, *flags)
        _until_up(base, process, log)
        first = stack.enter_context(
            turnkeeper("worker", *APP, *flags, "--database", url, log=tmp_path / "w1.log", env=env)
        )
        client = subprocess.Popen(
            ["node", str(CLIENTS / f"{scenario}.mjs"), base],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=CLIENTS,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while streamed(url) < 3 and time.monotonic() < deadline:  # some words streamed
            time.sleep(0.05)
        assert streamed(url) >= 3, "the first worker streamed some words"
        first.kill()
        first.wait()
        stack.enter_context(
            turnkeeper("worker", *APP, *flags, "--database", url, log=tmp_path / "w2.log", env=env)
        )
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err.decode()
        got = json.loads(out.decode().strip().splitlines()[-1])
        auth = {"authorization": f"Bearer {got['token']}"}
        page = httpx.get(f"{base}/api/conversations/{got['conversation']}", headers=auth).json()
    final = page["messages"][-1]["text"]
    assert len(model.requests) == 2, "the killed call was made again"
    assert final == WORDS
    assert got["text"] == final, got["types"]
