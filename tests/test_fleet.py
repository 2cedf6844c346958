"""The README's fleet runs every turn (issue 44.1): `serve --no-worker` and two `worker`
processes of an assistant whose `instructions` is a function run 20 of 20 turns; a worker
of a second version of it (one tool's body changed) runs the turns the first queued.

Real processes on PostgreSQL against a fake Messages API. Each process prints at start
which assistant and version it serves: the same version in every process of one app.
"""

from __future__ import annotations

import asyncio
import os
import re
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer
from tests.test_resume import Api
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import STARTING, eventually

pytestmark = pytest.mark.postgres

BAKERY = '''
from turnkeeper import Assistant


def instructions(ctx):
    return "You help the customers of a bakery."


def opening_hours(day: str) -> str:
    """When the bakery opens on a day.

    Args:
        day: the day of the week
    """
    return "{hours}"


assistant = Assistant(name="Bakery", instructions=instructions, tools=[opening_hours])
'''
SERVES = re.compile(r"this process serves bakery:assistant, assistant 'Bakery' \(version (\w+)\)")


def bakery(folder: Path, hours: str) -> list[str]:
    """The app in `folder`, its tool answering `hours`: the command line naming it."""
    folder.mkdir()
    (folder / "bakery.py").write_text(BAKERY.replace("{hours}", hours))
    return ["bakery:assistant", "--app-dir", str(folder), "--provider", "anthropic"]


def env_of(model: FakeModelServer) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": model.url}


async def version_said(log: Path) -> str:
    """The version the process says at start that it serves."""
    found: list[str] = []

    async def said() -> bool:
        found[:] = SERVES.findall(output(log))
        return bool(found)

    await eventually(said, f"{log.name} to say what it serves", bound=STARTING)
    return found[0]


async def started(log: Path) -> None:
    async def listening() -> bool:
        return "Starting worker on queues" in output(log)

    await eventually(listening, f"{log.name} to listen", bound=STARTING)


async def serve(stack: ExitStack, app: list[str], url: str, env: dict[str, str], log: Path) -> str:
    """`serve --no-worker` of `app`, up: its address."""
    port = free_port()
    command = ["serve", *app, "--no-worker", "--database", url, "--port", str(port)]
    process = stack.enter_context(turnkeeper(*command, log=log, env=env))
    base = f"http://127.0.0.1:{port}"
    await until_up(base, process, log)
    return base


async def test_a_fleet_of_an_assistant_with_an_instructions_function_runs_every_turn(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    app = bakery(tmp_path / "v1", "8 to 18")
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model = stack.enter_context(FakeModelServer([answer("Fresh bread.")] * 20))
        env = env_of(model)
        serve_log = tmp_path / "serve.log"
        logs = [tmp_path / f"worker-{n}.log" for n in (1, 2)]
        for log in logs:
            stack.enter_context(turnkeeper("worker", *app, "--database", url, log=log, env=env))
        base = await serve(stack, app, url, env, serve_log)
        versions = {await version_said(log) for log in [serve_log, *logs]}
        assert len(versions) == 1, "every process of one app serves one version"
        for log in logs:
            await started(log)
        apis = [Api(base) for _ in range(20)]
        turn_ids = await asyncio.gather(*(api.ask(f"question {n}") for n, api in enumerate(apis)))
        finals = await asyncio.gather(
            *(
                api.until(turn_id, done=True, bound=90)
                for api, turn_id in zip(apis, turn_ids, strict=True)
            )
        )
    everything = "".join(output(log) for log in [serve_log, *logs])
    assert [f["status"] for f in finals] == ["finished"] * 20, everything
    assert all(f["messages"][-1]["text"] == "Fresh bread." for f in finals)
    assert len(model.requests) == 20
    assert "another assistant" not in everything
    assert "which it never runs" not in everything


async def test_a_second_version_runs_the_turns_the_first_queued(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    first = bakery(tmp_path / "v1", "8 to 18")
    second = bakery(tmp_path / "v2", "7 to 19")
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model = stack.enter_context(FakeModelServer([answer("Open at 7.")] * 3))
        env = env_of(model)
        serve_log = tmp_path / "serve.log"
        base = await serve(stack, first, url, env, serve_log)
        old = await version_said(serve_log)
        apis = [Api(base) for _ in range(3)]
        turn_ids = [await api.ask(f"when do you open? ({n})") for n, api in enumerate(apis)]
        worker_log = tmp_path / "worker-v2.log"
        stack.enter_context(turnkeeper("worker", *second, "--database", url, log=worker_log,
                                       env=env))  # fmt: skip
        new = await version_said(worker_log)
        finals = [
            await api.until(t, done=True, bound=60) for api, t in zip(apis, turn_ids, strict=True)
        ]
    said = output(worker_log)
    assert new != old, "one tool's body changed: another version"
    assert [f["status"] for f in finals] == ["finished"] * 3, said + output(serve_log)
    line = next(x for x in said.splitlines() if "this process serves" in x)
    assert f"it runs those queued by other versions of it (3 turns of version {old})" in line
    running = [x for x in said.splitlines() if "running turns queued by assistant" in x]
    assert len(running) == 1, "said once, with both versions"
    assert old in running[0]
    assert new in running[0]
