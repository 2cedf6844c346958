"""A turn's usage and cost as the store keeps them: known tokens times known prices."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scripts import answer, asks, tool_use, usage
from tests.waiting import eventually
from turnkeeper import ScriptedProvider, run_turn
from turnkeeper.api import create_app
from turnkeeper.cli import main, timeline
from turnkeeper.observe import prices
from turnkeeper.service.job import TurnJob, failed
from turnkeeper.store import Store, held_by, new_token
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.usage import Usage
from turnkeeper.wire import Message, Reply, ToolSpec

SONNET = "claude-sonnet-4-5-20250929"
"""$3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens."""


def lookup() -> FunctionToolset:
    return FunctionToolset([Tool(ToolSpec("lookup", "Look it up."), lambda args: "found")])


class NoQueue:
    async def enqueue(self, turn_id: str) -> None:
        pass


async def test_a_scripted_turns_cost_is_stored_with_it_and_summed_per_conversation(
    store: Store,
) -> None:
    token, token_hash = new_token()
    conversation_id = await store.create_conversation(token_hash)
    first = asks(tool_use("lookup"))
    first["model"] = SONNET
    first["usage"] = usage(1_000, 200, cache_creation_input_tokens=2_000)
    last = answer("done", model=SONNET, usage=usage(1_500, 100, cache_read_input_tokens=2_000))
    costs = []
    for question in ("one", "two"):
        turn = await store.create_turn(conversation_id, question)
        job = TurnJob(store, ScriptedProvider([first, last]), lookup(), reporter=lambda r: None)
        await job.run(turn.turn_id)
        state = await store.state_after(turn.turn_id, 0)
        assert state is not None
        costs.append(state["usage"]["cost_usd"])
    # first call: 1000*3 + 200*15 + 2000*3.75 = 13500; second: 1500*3 + 100*15 + 2000*0.3 = 6600
    assert costs == [pytest.approx(0.0201), pytest.approx(0.0201)]
    stored = await store.usages(conversation_id)
    assert [u.cost_usd for u in stored] == [pytest.approx(0.0201)] * 2
    app = create_app(store, NoQueue())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t.test") as client:
        response = await client.get(
            f"/api/conversations/{conversation_id}",
            headers={"Authorization": f"Bearer {token}"},
        )
    summed = response.json()["usage"]
    assert summed["iterations"] == 4
    assert summed["input_tokens"] == 5_000
    assert summed["cost_usd"] == pytest.approx(0.0402)


async def test_a_turn_finalised_by_failed_keeps_the_cost_recorded_so_far(store: Store) -> None:
    conversation_id = await store.create_conversation(new_token()[1])
    turn = await store.create_turn(conversation_id, "q")
    fence = await store.claim(turn.turn_id, 30.0, "anthropic")
    assert fence is not None
    await store.record_usage(turn.turn_id, fence, Usage(1, 1_000, 10, cost_usd=0.00315))
    assert await failed(store, turn.turn_id, held_by(fence), reporter=lambda r: None)
    state = await store.state_after(turn.turn_id, 0)
    assert state is not None
    assert state["status"] == "failed"
    assert state["usage"]["cost_usd"] == pytest.approx(0.00315)
    [kept] = await store.usages(conversation_id)
    assert kept.cost_usd == pytest.approx(0.00315)


class HangsOnSecondCall(ScriptedProvider):
    """Answers its first call from the script; the second never returns."""

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        if self.unused == 0:
            await asyncio.Event().wait()
        return await super().complete(history, tools, timeout)


async def test_a_turn_stopped_mid_call_keeps_its_priced_call_records(store: Store) -> None:
    """The job is cancelled during the second model call: `failed()` finalises the turn,
    and the first call's stored record still carries its model and cost."""
    conversation_id = await store.create_conversation(new_token()[1])
    turn = await store.create_turn(conversation_id, "q")
    first = asks(tool_use("lookup"))
    first["model"] = SONNET
    first["usage"] = usage(1_000, 200, cache_creation_input_tokens=2_000)
    job = TurnJob(store, HangsOnSecondCall([first]), lookup(), reporter=lambda r: None)
    running = asyncio.create_task(job.run(turn.turn_id))

    async def checkpointed() -> bool:
        return len(await store.iterations(turn.turn_id)) == 1

    await eventually(checkpointed, "the first iteration's write")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    state = await store.state_after(turn.turn_id, 0)
    assert state is not None
    assert state["status"] == "failed"
    assert state["usage"]["cost_usd"] == pytest.approx(0.0135)
    record, unanswered = await store.iterations(turn.turn_id)
    assert record["model"] == SONNET
    assert record["cost_usd"] == pytest.approx(0.0135)
    assert (record["input_tokens"], record["output_tokens"]) == (1_000, 200)
    assert unanswered["stop_reason"] is None, "the call in flight is kept, unanswered"
    assert "cost_usd" not in unanswered
    totals = timeline.totals(timeline.stored_rows([record, unanswered]))
    assert totals.cost_usd == pytest.approx(0.0135), "an unanswered call costs nothing known"


@pytest.fixture
def fresh_prices() -> Iterator[None]:
    """The CLI sets the process's price table; each test starts from, and leaves, none."""
    prices.use(None)
    yield
    prices.use(None)


def priced_script(tmp_path: Path) -> Path:
    """One answer from `my-model`: a million tokens in and half a million out."""
    script = tmp_path / "s.json"
    reply = answer("hi")
    reply["model"], reply["usage"] = "my-model", usage(1_000_000, 500_000)
    script.write_text(json.dumps([reply]))
    return script


def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"my-model": {"input": 2.0, "output": 10.0}}))
    return path


@pytest.mark.usefixtures("fresh_prices")
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_run_prices_a_turn_from_the_file_named(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """$2 per million in and $10 per million out: 1M in and 0.5M out cost $7."""
    argv = ["run", "--script", str(priced_script(tmp_path)), "--json", "q"]
    if how == "flag":
        argv[1:1] = ["--prices", str(price_file(tmp_path))]
    else:
        monkeypatch.setenv(prices.ENV, str(price_file(tmp_path)))
    assert main(argv) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["usage"]["cost_usd"] == pytest.approx(7.0)


@pytest.mark.usefixtures("fresh_prices")
def test_run_without_a_price_for_the_model_says_no_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--script", str(priced_script(tmp_path)), "--json", "q"]) == 0
    assert "cost_usd" not in json.loads(capsys.readouterr().out)["usage"]


class Requested(ScriptedProvider):
    """A provider that describes the model it asks for; its responses name none."""

    def describe(self) -> dict[str, Any]:
        return {"provider": "scripted", "model": SONNET}


async def test_a_response_that_names_no_model_is_priced_as_the_model_requested() -> None:
    reply = answer("hi")
    del reply["model"]
    reply["usage"] = usage(1_000_000, 0)
    result = await run_turn("q", provider=Requested([reply]))
    assert result.usage.cost_usd == pytest.approx(3.0)  # Sonnet: $3 per million in


class HourCached(ScriptedProvider):
    """A provider that marks the prompt cache for an hour, as `prompt_cache="1h"` does."""

    def describe(self) -> dict[str, Any]:
        return {"provider": "scripted", "model": SONNET, "prompt_cache": "1h"}


@pytest.mark.usefixtures("fresh_prices")
async def test_a_turn_marked_for_an_hour_pays_its_writes_at_the_hours_price() -> None:
    """A call's writes are at the TTL its request marked: 2x the input price for an hour,
    1.25x for five minutes; reads are 0.1x either way."""
    reply = answer("hi", model=SONNET, usage=usage(0, 0, cache_creation_input_tokens=1_000_000))
    reply["usage"]["cache_read_input_tokens"] = 1_000_000
    hour = await run_turn("q", provider=HourCached([dict(reply)]))
    five = await run_turn("q", provider=Requested([dict(reply)]))
    assert hour.usage.cost_usd == pytest.approx(6.0 + 0.3)
    assert five.usage.cost_usd == pytest.approx(3.75 + 0.3)
    priced = hour.trace.calls[0].usage
    assert priced is not None
    assert priced.cost_usd == pytest.approx(6.3)
    assert hour.trace.to_json()["calls"][0]["cost_usd"] == pytest.approx(6.3)
