"""The protocols proven with their real clients (issue 29): `@ag-ui/client`'s HttpAgent and
the `ai` package's DefaultChatTransport / readUIMessageStream, run by Node
(`tests/clients/*.mjs`) against a served assistant whose fake model streams
with gaps, on the embedded default and with a worker on PostgreSQL."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, body, text, tool_use
from tests.test_resume import APP, served
from tests.test_server import output, turnkeeper, until_up

CLIENTS = Path(__file__).resolve().parent / "clients"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (CLIENTS / "node_modules").is_dir(),
    reason="the protocol clients need node and `npm ci` in tests/clients",
)


class Served:
    def __init__(self, base: str, model: FakeModelServer, logs: list[Path]) -> None:
        self.base = base
        self.model = model
        self.logs = logs

    def node(self, scenario: str, *args: str, bound: float = 60) -> dict[str, Any]:
        """Run `tests/clients/<scenario>.mjs <base>`; its JSON output."""
        done = subprocess.run(
            ["node", str(CLIENTS / f"{scenario}.mjs"), self.base, *args],
            capture_output=True,
            timeout=bound,
            cwd=CLIENTS,
            check=False,
        )
        logs = "\n".join(output(log)[-3000:] for log in self.logs)
        assert done.returncode == 0, f"{done.stderr.decode()}\n{logs}"
        lines = done.stdout.decode().strip().splitlines()
        assert lines, f"no output: {done.stderr.decode()}\n{logs}"
        found: dict[str, Any] = json.loads(lines[-1])
        return found


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("protocols")
    with ExitStack() as stack:
        if request.param == "postgres":
            from tests.databases import fresh_schema, test_database

            url = stack.enter_context(fresh_schema(stack.enter_context(test_database())))
        else:
            url = f"sqlite:///{tmp / 'chat.db'}"
        model = stack.enter_context(FakeModelServer([], gap=0.02))
        env = {
            **__import__("os").environ,
            "ANTHROPIC_API_KEY": "sk-test-not-real",
            "ANTHROPIC_BASE_URL": model.url,
        }
        base, (process, log) = served(stack, url, env, tmp)
        logs = [log]
        if request.param == "postgres":
            worker_log = tmp / "worker.log"
            stack.enter_context(turnkeeper("worker", *APP, "--database", url, log=worker_log, env=env))
            logs.append(worker_log)
        import asyncio

        asyncio.run(until_up(base, process, log))
        yield Served(base, model, logs)


LONG = " ".join(f"word{n}" for n in range(40))


def test_ag_ui_text(app: Served) -> None:
    app.model.script = [answer("Hello there, reader.")]
    got = app.node("ag_ui_text")
    assert got["error"] is None, got
    assert got["types"][0] == "RUN_STARTED"
    assert got["types"][-1] == "RUN_FINISHED"
    assert got["text"] == "Hello there, reader."
    assert got["token"] is True
