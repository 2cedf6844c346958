"""What a turn needs travels with the turn (issue 32): the assistant that queued it and
the settings that decide its fate are recorded when it is queued, a worker claims only
its own assistant's turns, and every sweeper applies the turn's own settings.

Real `turnkeeper serve --no-worker` and `worker` processes on PostgreSQL against a fake
Messages API, and the store and sweeper on both databases."""

from __future__ import annotations

import asyncio
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.scripts import answer
from tests.test_resume import APP, CRASH_SCRIPT, Api, model_env, runs, served
from tests.test_server import output, turnkeeper, until_up
from tests.waiting import STARTING, eventually
from turnkeeper.assistant import Assistant, demo_assistant
from turnkeeper.budget import Budget
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import EXPIRED, Store, new_token
from turnkeeper.store.records import Fate, Owner
from turnkeeper.turn.resume import Resuming

APP_OWNER = Owner("Payments desk", "aaaaaaaaaaaa")
DEMO_OWNER = Owner("Assistant", "bbbbbbbbbbbb")


async def asked(store: Store, owner: Owner | None, fate: Fate | None = None) -> str:
    conversation_id = await store.create_conversation(new_token()[1])
    turn = await store.create_turn(conversation_id, "hi", owner=owner, fate=fate)
    return turn.turn_id


async def test_a_turn_records_its_assistant_and_its_fate(store: Store) -> None:
    fate = Fate(True, 3, 60.0, Budget(max_iterations=4).as_dict())
    turn_id = await asked(store, APP_OWNER, fate)
    turn = await store.turn(turn_id)
    assert turn is not None
    assert (turn.owner, turn.fate) == (APP_OWNER, fate)
    start = await store.start(turn_id)
    assert start is not None
    assert start.turn.fate == fate


async def test_only_the_turns_own_assistant_claims_it(store: Store) -> None:
    turn_id = await asked(store, APP_OWNER)
    assert await store.queued(assistant=DEMO_OWNER.assistant) == []
    assert await store.queued(assistant=APP_OWNER.assistant) == [turn_id]
    assert await store.claim(turn_id, 30, "anthropic", DEMO_OWNER.assistant) is None
    assert await store.owners() == [(APP_OWNER, 1)]
    assert await store.claim(turn_id, 30, "anthropic", APP_OWNER.assistant) == 1
    assert await store.owners() == [], "a running turn is not queued"


async def test_another_version_of_the_assistant_claims_its_turns(store: Store) -> None:
    turn_id = await asked(store, APP_OWNER)
    newer = Owner(APP_OWNER.assistant, "cccccccccccc")
    assert await store.queued(assistant=newer.assistant) == [turn_id]
    assert await store.claim(turn_id, 30, "anthropic", newer.assistant) == 1


async def test_a_turn_that_records_no_assistant_is_anyones(store: Store) -> None:
    turn_id = await asked(store, None)
    assert await store.queued(assistant=DEMO_OWNER.assistant) == [turn_id]
    assert await store.claim(turn_id, 30, "anthropic", DEMO_OWNER.assistant) == 1


async def test_a_sweeper_ends_a_wait_after_the_turns_own_approval_timeout(store: Store) -> None:
    from tests.api.test_approvals import Ran
    from tests.api.test_turn_exits import ASKS, GATE
    from turnkeeper.providers.scripted import ScriptedProvider
    from turnkeeper.service.job import TurnJob

    job = TurnJob(store, ScriptedProvider([ASKS] * 2), Ran().toolset(), resuming=GATE)
    short = await asked(store, APP_OWNER, Fate(approval_timeout=0.5))
    long = await asked(store, APP_OWNER, Fate(approval_timeout=3600.0))
    for turn_id in (short, long):
        assert await job.run(turn_id) is None, "the job ends while the turn waits"
    await asyncio.sleep(1.0)
    patient = Sweeper(store, resuming=Resuming(approval_timeout=7200.0), reporter=lambda r: None)
    assert await patient.sweep() == [short], "each turn waits as long as it was queued to"
    still = await store.state_after(long, 0)
    assert still is not None
    assert still["status"] == "waiting"


class Held:
    def __init__(self) -> None:
        self.turn_ids: list[str] = []

    async def enqueue(self, turn_id: str) -> None:
        self.turn_ids.append(turn_id)


async def test_a_sweeper_resumes_a_turn_queued_to_resume_though_its_process_was_not_told(
    store: Store,
) -> None:
    turn_id = await asked(store, APP_OWNER, Fate(resume_after_crash=True))
    assert await store.claim(turn_id, 0.2, "anthropic") == 1
    await asyncio.sleep(0.4)
    held = Held()
    sweeper = Sweeper(store, resuming=Resuming(resume_after_crash=False), requeue=held)
    assert await sweeper.sweep() == [], "resumed, not finalised"
    assert held.turn_ids == [turn_id]
    assert await store.take_over(turn_id, EXPIRED) is None, "queued again, not running"


def test_the_version_tells_assistants_apart_but_not_the_settings_a_turn_records() -> None:
    def helper() -> str:
        """Help."""
        return "ok"

    app = Assistant(name="Assistant", tools=[helper])
    assert app.owner.version != demo_assistant().owner.version
    same = Assistant(name="Assistant", tools=[helper], resume_after_crash=True)
    assert same.owner == app.owner, "fate travels with the turn, not in the version"
    assert same.fate.resume_after_crash
    assert not app.fate.resume_after_crash


@pytest.mark.postgres
async def test_a_worker_without_app_runs_none_of_an_apps_turns_and_says_why(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model, env = stack.enter_context(model_env([answer("Paid.")], tmp_path / "tools.log"))
        base, (api_process, serve_log) = served(stack, url, env, tmp_path)
        await until_up(base, api_process, serve_log)
        api = Api(base)
        turn_id = await api.ask("what do I owe?")
        demo_log = tmp_path / "demo-worker.log"
        stack.enter_context(turnkeeper("worker", "--database", url, log=demo_log, env=env))

        async def said() -> bool:
            return "which it never runs" in output(demo_log)

        await eventually(said, "the demo worker to say whose turns these are", bound=30)
        line = next(x for x in output(demo_log).splitlines() if "which it never runs" in x)
        assert "1 turn of assistant 'Payments desk'" in line
        assert "the demo assistant 'Assistant'" in line
        await asyncio.sleep(3)
        state = await api.state(turn_id)
        assert state["status"] == "queued", output(demo_log)
        assert model.requests == [], "the demo worker never ran it"
        assert "offline demo" not in str(state)
        app_log = tmp_path / "app-worker.log"
        stack.enter_context(turnkeeper("worker", *APP, "--database", url, log=app_log, env=env))
        final = await api.until(turn_id, done=True)
    assert final["status"] == "finished", output(app_log)
    assert final["messages"][-1]["text"] == "Paid."


@pytest.mark.postgres
@pytest.mark.parametrize("restart", [None, 1.0])
async def test_resume_set_only_where_the_turn_was_queued_resumes_it_after_sigkill(
    postgres_database: str, tmp_path: Path, restart: float | None
) -> None:
    """`--resume-after-crash` given to `serve --no-worker` alone; its workers, told nothing,
    sweep every third of a second (the API's every 5 s). The one running the turn is killed
    during its tools; the other, already running (`restart` None) or started `restart` s
    after the kill, finds the turn first, resumes it as it was queued to, and finishes it."""
    from tests.databases import fresh_schema

    tool_log = tmp_path / "tools.log"
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model, env = stack.enter_context(model_env(list(CRASH_SCRIPT), tool_log))
        base, (api_process, serve_log) = served(
            stack, url, env, tmp_path, "--lease", "30", "--resume-after-crash"
        )
        await until_up(base, api_process, serve_log)

        def worker(n: int) -> subprocess.Popen[bytes]:
            log = tmp_path / f"worker-{n}.log"
            command = ["worker", *APP, "--lease", "1", "--database", url]
            return stack.enter_context(turnkeeper(*command, log=log, env=env))

        async def started(n: int) -> None:
            async def listening() -> bool:
                return "Starting worker on queues" in output(tmp_path / f"worker-{n}.log")

            await eventually(listening, f"worker {n} to start", bound=STARTING)

        doomed = worker(1)
        await started(1)  # it fetches the turn (or the idle one does)
        api = Api(base)
        turn_id = await api.ask("charge me for it")

        async def both_tools_started() -> bool:
            return sorted(model.tool_starts) == ["charge", "look_up"]

        await eventually(both_tools_started, "both tools to start", bound=30)
        if restart is None:
            worker(2)
            await started(2)  # running when the other dies: its sweeper finds the turn
        doomed.kill()
        doomed.wait()
        if restart is not None:
            await asyncio.sleep(restart)
            worker(2)
        final = await api.until(turn_id, done=True, bound=60)
    logs = output(serve_log) + output(tmp_path / "worker-2.log")
    assert final["status"] == "finished", logs
    assert len(model.requests) == 2, "the call before the kill is not repeated"
    assert runs(tool_log).count("charge") == 1, "the other tool never runs twice"
