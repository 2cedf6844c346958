"""`turnkeeper conversations delete`, `turnkeeper feedback` and the feedback `trace show`
prints, on both stores (cli/manage.py)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tests.store.test_contract import claimed_turn
from tests.store.test_controls import finished
from turnkeeper.cli import main
from turnkeeper.cli.manage import since_time
from turnkeeper.errors import ConfigError
from turnkeeper.store import open_store


async def answered_with_feedback(url: str) -> tuple[str, str]:
    store = await open_store(url)
    try:
        conversation_id, turn_id = await finished(store, "what is on my list?")
        await store.give_feedback(turn_id, "down", 'said "milk" twice')
        return conversation_id, turn_id
    finally:
        await store.close()


async def exists(url: str, turn_id: str) -> bool:
    store = await open_store(url)
    try:
        return await store.turn(turn_id) is not None
    finally:
        await store.close()


def test_feedback_is_exported_as_json_lines_and_shown_by_trace_show(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation_id, turn_id = asyncio.run(answered_with_feedback(store_url))
    assert main(["feedback", "--database", store_url, "--since", "1h"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["turn_id"] == turn_id
    assert row["conversation_id"] == conversation_id
    assert (row["rating"], row["comment"], row["outcome"]) == (
        "down",
        'said "milk" twice',
        "finished",
    )
    assert row["question"] == "what is on my list?"
    assert main(["feedback", "--database", store_url, "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["trace", "show", turn_id, "--database", store_url]) == 0
    assert 'feedback: down "said \\"milk\\" twice" (' in capsys.readouterr().out


def test_conversations_delete_removes_it_and_refuses_a_running_one_without_stop(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation_id, turn_id = asyncio.run(answered_with_feedback(store_url))
    assert main(["conversations", "delete", conversation_id, "--database", store_url]) == 0
    assert capsys.readouterr().out == f"deleted conversation {conversation_id}\n"
    assert not asyncio.run(exists(store_url, turn_id))
    assert main(["conversations", "delete", conversation_id, "--database", store_url]) == 2
    assert f"no conversation {conversation_id}" in capsys.readouterr().err

    async def running() -> tuple[str, str]:
        store = await open_store(store_url)
        try:
            conversation, turn, _ = await claimed_turn(store)
            return conversation, turn
        finally:
            await store.close()

    conversation_id, turn_id = asyncio.run(running())
    assert main(["conversations", "delete", conversation_id, "--database", store_url]) == 1
    assert turn_id in capsys.readouterr().out
    assert asyncio.run(exists(store_url, turn_id))
    args = ["conversations", "delete", conversation_id, "--stop", "--database", store_url]
    assert main(args) == 0
    assert not asyncio.run(exists(store_url, turn_id))


def test_a_missing_sqlite_file_is_one_line_and_not_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["feedback", "--database", url]) == 2
    assert main(["conversations", "delete", "c_1", "--database", url]) == 2
    assert "there is no SQLite database" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_since_reads_ages_and_times() -> None:
    now = time.time()
    assert since_time(None, now) == 0.0
    assert since_time("24h", now) == now - 86400
    assert since_time("30m", now) == now - 1800
    assert since_time("2026-12-01", now) == 1796083200.0
    assert since_time("2026-12-01T01:00+01:00", now) == 1796083200.0
    with pytest.raises(ConfigError, match="--since 'yesterday'"):
        since_time("yesterday", now)
