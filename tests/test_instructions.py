"""Instructions that know who asks (issue 33, item 5): `Assistant(instructions=fn)`, sync or
async, called once per turn in the job with the turn's `ToolContext`; what it returns is
the request's system prompt (a marked, cached block on Anthropic) and the trace's."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer
from tests.test_prompt_cache import two_turns
from tests.test_server import free_port, turnkeeper, until_up
from turnkeeper import Assistant, LocalHooks, run_turn
from turnkeeper.errors import ConfigError
from turnkeeper.outcomes import Outcome
from turnkeeper.providers import instructed
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store, new_token
from turnkeeper.tools.context import ToolContext

CACHED = {"type": "ephemeral"}


def said(ctx: ToolContext) -> str:
    return f"You help {ctx.user} in {ctx.locale} (turn {ctx.turn_id})."


async def said_async(ctx: ToolContext) -> str:
    await asyncio.sleep(0)
    return said(ctx)


@pytest.mark.parametrize("instructions", [said, said_async], ids=["sync", "async"])
async def test_each_turn_is_sent_the_instructions_of_who_asked(
    store: Store, instructions: object
) -> None:
    asked: list[ToolContext] = []

    def counted(ctx: ToolContext) -> object:
        asked.append(ctx)
        return instructions(ctx)  # type: ignore[operator]

    with FakeModelServer([answer("hi ann"), answer("hola bob")]) as model:
        provider = AnthropicProvider(api_key="sk-test", base_url=model.url, system="fixed")
        job = TurnJob(store, provider, instructions=counted)  # type: ignore[arg-type]
        turns = []
        for user, locale in (("ann", "en"), ("bob", "es")):
            conversation = await store.create_conversation(new_token()[1], owner=user)
            turn = await store.create_turn(conversation, "hello", user=user, locale=locale)
            assert await job.run(turn.turn_id) is Outcome.FINISHED
            turns.append(turn.turn_id)
        systems = [r["system"] for r in model.requests]
    assert [(c.user, c.locale, c.turn_id) for c in asked] == [
        ("ann", "en", turns[0]), ("bob", "es", turns[1])
    ]  # fmt: skip
    assert systems == [
        [
            {
                "type": "text",
                "text": f"You help ann in en (turn {turns[0]}).",
                "cache_control": CACHED,
            }
        ],
        [
            {
                "type": "text",
                "text": f"You help bob in es (turn {turns[1]}).",
                "cache_control": CACHED,
            }
        ],
    ], "the turn's instructions, marked as the cached prefix"


async def test_instructions_that_fail_fail_the_turn_and_say_why(store: Store) -> None:
    def broken(ctx: ToolContext) -> object:
        return 42

    with FakeModelServer([answer("never")]) as model:
        provider = AnthropicProvider(api_key="sk-test", base_url=model.url)
        conversation = await store.create_conversation(new_token()[1])
        turn = await store.create_turn(conversation, "hello")
        outcome = await TurnJob(store, provider, instructions=broken).run(turn.turn_id)  # type: ignore[arg-type]
        assert model.requests == []
    assert outcome is Outcome.FAILED
    state = await store.state_after(turn.turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"]) == ("failed", True)


async def test_the_trace_records_the_turns_instructions() -> None:
    with FakeModelServer([answer("hi")]) as model:
        provider = AnthropicProvider(api_key="sk-test", base_url=model.url, system="fixed")
        with instructed("You help ann."):
            result = await run_turn("hello", provider=provider, hooks=LocalHooks())
    assert result.trace.request["system"] == "You help ann."
    assert provider.describe()["system"] == "fixed", "outside the turn: the provider's own"


def test_an_assistant_takes_a_function_and_sends_no_fixed_prompt() -> None:
    assistant = Assistant(instructions=said_async)
    assert assistant.model_settings().system is None
    with pytest.raises(ConfigError, match="instructions must be a string or a function"):
        Assistant(instructions=42)  # type: ignore[arg-type]


APP = """
from turnkeeper import Assistant, ToolContext

def instructions(ctx: ToolContext) -> str:
    return f"Answer in {ctx.locale}."

assistant = Assistant(instructions=instructions)
"""


async def test_a_served_assistant_calls_its_instructions_in_the_job(tmp_path: Path) -> None:
    (tmp_path / "told.py").write_text(APP)
    port, log = free_port(), tmp_path / "serve.log"
    with FakeModelServer([answer("one"), answer("two")]) as model:
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": model.url}
        app = ["told:assistant", "--app-dir", str(tmp_path), "--provider", "anthropic"]
        database = f"sqlite:///{tmp_path / 'tk.db'}"
        args = ("serve", *app, "--database", database, "--port", str(port))
        with turnkeeper(*args, log=log, env=env) as process:
            base = f"http://127.0.0.1:{port}"
            await until_up(base, process, log)
            finals = await two_turns(base)
        assert [f["status"] for f in finals] == ["finished", "finished"]
        assert [r["system"][0]["text"] for r in model.requests] == ["Answer in en."] * 2
