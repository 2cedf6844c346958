"""Long conversations inside a context window (issue 30), against fake APIs that enforce a
6,000-token window and refuse as the real ones do, on both stores and both wire formats."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest

from tests.api.test_routes import HeldQueue, client_for
from tests.scripts import assert_valid_history
from tests.window_server import READ_NOTES, WindowServer
from turnkeeper.api import create_app
from turnkeeper.cli.timeline import render, stored_rows
from turnkeeper.outcomes import Outcome
from turnkeeper.providers import Provider
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.openai import OpenAIProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store, new_token
from turnkeeper.turn.compaction import Compaction

WINDOW = 6_000
FIRST = "Please remember: the code word is pomegranate."
LAST = "What is the code word?"


@pytest.fixture
def fake() -> Iterator[WindowServer]:
    with WindowServer(WINDOW) as server:
        yield server


def provider_for(wire: str, server: WindowServer) -> Provider:
    if wire == "anthropic":
        return AnthropicProvider(model="claude-fake", base_url=server.url, api_key="k")
    return OpenAIProvider(model="gpt-fake", base_url=f"{server.url}/v1", api_key="k")


def question(n: int, turns: int) -> str:
    if n == 0:
        return FIRST
    if n == turns - 1:
        return LAST
    return f"Please read the notes for day {n}."


class Talk:
    """One conversation's turns, each run by a job as a worker runs it."""

    def __init__(self, conversation_id: str, token: str) -> None:
        self.conversation_id = conversation_id
        self.token = token
        self.turn_ids: list[str] = []
        self.outcomes: list[Outcome | None] = []


async def converse(
    store: Store, provider: Provider, compaction: Compaction | None, turns: int
) -> Talk:
    token, token_hash = new_token()
    talk = Talk(await store.create_conversation(token_hash), token)
    job = TurnJob(store, provider, READ_NOTES, compaction=compaction)
    for n in range(turns):
        turn = await store.create_turn(talk.conversation_id, question(n, turns))
        talk.turn_ids.append(turn.turn_id)
        talk.outcomes.append(await job.run(turn.turn_id))
    return talk


async def calls_of(store: Store, talk: Talk) -> list[dict[str, Any]]:
    """Every model call's record (what `trace show` reads), in order."""
    return [call for turn_id in talk.turn_ids for call in await store.iterations(turn_id)]


async def captions_of(store: Store, talk: Talk) -> list[str]:
    """Every caption a turn's event log shows (what the widget and the protocols show)."""
    return [
        str(event.body["key"])
        for turn_id in talk.turn_ids
        for event in await store.events_after(turn_id, 0)
        if event.type.value == "activity"
    ]


async def transcript(store: Store, conversation_id: str, token: str) -> list[dict[str, Any]]:
    async with client_for(create_app(store, HeldQueue())) as client:
        response = await client.get(
            f"/api/conversations/{conversation_id}",
            params={"limit": 1000},
            headers={"authorization": f"Bearer {token}"},
        )
    assert response.status_code == 200
    return list(response.json()["messages"])


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_forty_turns_in_a_small_window_all_finish_and_the_first_fact_is_kept(
    store: Store, fake: WindowServer, wire: str
) -> None:
    turns = 40
    talk = await converse(store, provider_for(wire, fake), Compaction(window=WINDOW), turns)
    assert talk.outcomes == [Outcome.FINISHED] * turns
    assert fake.summaries >= 2, "the conversation was summarised, more than once"
    assert max(fake.tokens) <= WINDOW
    assert fake.refused == 0, "compacted before sending, never refused"
    for body in fake.requests:  # strict chat templates refuse two user messages in a row
        roles = [m["role"] for m in body["messages"]]
        assert ("user", "user") not in pairwise(roles)

    calls = await calls_of(store, talk)
    summaries = [c for c in calls if c["decision"] == "compaction"]
    assert len(summaries) == fake.summaries
    assert {c["caption"] for c in summaries} == {"activity.compacted"}
    said = [c["compacted"] for c in calls if "compacted" in c]
    assert any("summarised" in s for s in said)
    assert any("cleared" in s for s in said)
    assert "activity.compacted" in await captions_of(store, talk)
    summarised = next(c for c in calls if "summarised" in c.get("compacted", ""))
    records = {t: await store.iterations(t) for t in talk.turn_ids}
    turn_id = next(t for t in talk.turn_ids if summarised in records[t])
    shown_calls = render(stored_rows(records[turn_id]), "finished")
    assert f"compacted the request: {summarised['compacted']}" in shown_calls, "trace show"

    conversation_id, token = talk.conversation_id, talk.token
    shown = await transcript(store, conversation_id, token)
    asked = [m["text"] for m in shown if m["role"] == "user"]
    assert asked == [question(n, turns) for n in range(turns)], "every question is shown"
    answers = [m.get("text") for m in shown if m["role"] == "bot"]
    assert len(answers) == turns, "every answer is shown"
    assert answers[-1] == "The code word is pomegranate."

    history = await store.history(conversation_id)
    if wire == "anthropic":
        assert_valid_history(history)
    questions = [m for m in history if m["role"] == "user" and isinstance(m["content"], str)]
    assert len(questions) == turns, "the stored history is verbatim: nothing was dropped"
    assert history[0]["content"] == FIRST


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_without_compaction_the_turn_ends_context_exceeded_not_failed(
    store: Store, fake: WindowServer, wire: str
) -> None:
    turns = 16
    talk = await converse(store, provider_for(wire, fake), None, turns)
    outcomes, conversation_id, token = talk.outcomes, talk.conversation_id, talk.token
    assert Outcome.CONTEXT_EXCEEDED in outcomes
    assert Outcome.FAILED not in outcomes
    first = outcomes.index(Outcome.CONTEXT_EXCEEDED)
    assert outcomes[:first] == [Outcome.FINISHED] * first
    shown = await transcript(store, conversation_id, token)
    notices = [m.get("key") for m in shown if m["role"] == "bot" and "key" in m]
    assert "errors.ai_context_full" in notices
    assert "errors.ai_unavailable" not in notices
    assert fake.summaries == 0


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_a_refusal_for_size_compacts_and_sends_the_same_call_once_more(
    store: Store, fake: WindowServer, wire: str
) -> None:
    """The model's window unknown or mistaken (claude-fake: 200,000 by the table; gpt-fake:
    not in it): the first compaction comes from a refusal, inside the turn, which finishes;
    the window it stated is kept, and later turns compact before they are refused."""
    turns = 24
    talk = await converse(store, provider_for(wire, fake), Compaction(), turns)
    assert talk.outcomes == [Outcome.FINISHED] * turns, "each turn run once, and finished"
    assert fake.refused == 1, "the window stated is kept: later turns compact before it"
    calls = await calls_of(store, talk)
    refused = [i for i, c in enumerate(calls) if c.get("error_type") == "ContextTooLong"]
    assert len(refused) == fake.refused
    for i in refused:  # the refused call, a summary (in parts), then the same call again
        after = i + 1
        while calls[after]["decision"] == "compaction":
            after += 1
        assert after > i + 1, "a summary was asked for"
        assert "summarised" in calls[after]["compacted"]
    shown = await transcript(store, talk.conversation_id, talk.token)
    assert [m.get("text") for m in shown if m["role"] == "bot"][-1] == (
        "The code word is pomegranate."
    )
