"""`turnkeeper usage` (issue 31): the ledger as `GET /api/usage` shows it, read from either
store without changing it; with `--app`, the user's limits beside each use."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests import scripts
from tests.models import LOOKUP
from turnkeeper import Limits, ScriptedProvider
from turnkeeper.cli import main
from turnkeeper.service.job import TurnJob
from turnkeeper.store import new_token, open_store

APPS = Path(__file__).resolve().parent / "apps"


async def one_metered_turn(url: str, user: str) -> None:
    """One turn of two 400-token calls for `user`, under a day of 4,000 tokens."""
    store = await open_store(url)
    try:
        conversation_id = await store.create_conversation(new_token()[1], owner=user)
        turn = await store.create_turn(conversation_id, "look it up", user=user)
        billed = scripts.usage(input_tokens=300, output_tokens=100)
        asks = scripts.asks(scripts.tool_use("lookup"))
        asks["usage"] = billed
        provider = ScriptedProvider([asks, scripts.answer("found", usage=billed)])
        job = TurnJob(store, provider, LOOKUP, limits=Limits(tokens_per_day=4000))
        await job.run(turn.turn_id)
    finally:
        await store.close()


def test_usage_shows_a_users_day_and_with_the_app_their_limits(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(one_metered_turn(store_url, "ada"))
    app = ["--app", "limited:assistant", "--app-dir", str(APPS)]
    assert main(["usage", "--database", store_url, "--user", "ada", *app]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith("usage of user ada on ")
    assert re.fullmatch(r"  turns in the last minute +1  no limit +resets in .+", shown[1])
    assert re.fullmatch(r"  tokens today +800  of 4000 +resets in \d+ h \d+ min", shown[2])
    assert re.fullmatch(r"  cost today \(USD\) +0\.000000  no limit +resets in .*", shown[3])
    assert main(["usage", "--database", store_url, "--user", "bob"]) == 0
    assert re.match(r"  tokens today +0  no limit", capsys.readouterr().out.splitlines()[2])


def test_usage_of_a_missing_sqlite_file_is_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    assert main(["usage", "--database", f"sqlite:///{missing}"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"turnkeeper: error: there is no SQLite database at {missing}"
    )
    assert not missing.exists()


def test_trace_show_of_a_turn_that_reached_its_limit_says_so(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def spent_turn() -> str:
        store = await open_store(store_url)
        try:
            conversation_id = await store.create_conversation(new_token()[1], owner="ada")
            turn = await store.create_turn(conversation_id, "look it up", user="ada")
            asks = scripts.asks(scripts.tool_use("lookup"))
            asks["usage"] = scripts.usage(input_tokens=300, output_tokens=100)
            provider = ScriptedProvider([asks, scripts.answer("never asked")])
            job = TurnJob(store, provider, LOOKUP, limits=Limits(tokens_per_day=400))
            await job.run(turn.turn_id)
            return turn.turn_id
        finally:
            await store.close()

    turn_id = asyncio.run(spent_turn())
    assert main(["trace", "show", turn_id, "--database", store_url]) == 0
    shown = capsys.readouterr().out
    assert "outcome: limit_reached" in shown
    assert len([line for line in shown.splitlines() if "tool_use" in line]) == 1, "one call"
