"""`conversations delete` and `feedback`: an operator's side of what readers control.

`turnkeeper conversations delete ID --database URL` answers a deletion request made
outside the chat (a privacy request by mail, say): the conversation and everything of
it, as `DELETE /api/conversations/{id}` does. `turnkeeper feedback --database URL
--since 7d` prints the readers' ratings as JSON lines, to find the answers that fail.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..credentials import redact_url
from ..errors import ConfigError
from .traces import _readable

DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def add_commands(commands: Any) -> None:
    """`conversations delete` and `feedback`, on the top parser's subcommands."""
    conversations = commands.add_parser("conversations", help="manage stored conversations")
    which = conversations.add_subparsers(
        dest="conversations_command", required=True, parser_class=type(conversations)
    )
    delete = which.add_parser("delete", help="delete a conversation and everything of it")
    delete.add_argument("conversation", metavar="ID", help="the conversation's id (c_…)")
    delete.add_argument(
        "--stop",
        action="store_true",
        help="stop a turn of it that is not done, then delete (default: refuse, exit 1)",
    )
    _database(delete)
    feedback = commands.add_parser("feedback", help="readers' ratings as JSON lines")
    feedback.add_argument(
        "--since",
        metavar="WHEN",
        help="a time (2026-12-01, 2026-12-01T09:30, UTC unless it says) or an age (30m, 24h,"
        " 7d); default: all",
    )
    _database(feedback)


def _database(parser: Any) -> None:
    parser.add_argument(
        "--database",
        metavar="URL",
        help="the store (default: env TURNKEEPER_DATABASE_URL, else sqlite:///turnkeeper.db)",
    )


def cmd_conversations(args: argparse.Namespace) -> int:
    url = _existing(args.database)
    return asyncio.run(_delete(url, args.conversation, args.stop))


def cmd_feedback(args: argparse.Namespace) -> int:
    since = since_time(args.since, time.time())
    url = _existing(args.database)
    for line in asyncio.run(_feedback(url, since)):
        print(line)
    return 0


async def _delete(url: str, conversation_id: str, stop: bool) -> int:
    from ..store import Busy, open_store
    from ..turn.lifecycle import stop_waiting

    checked = await open_store(url, read_only=True)  # a database that is no store stays so
    try:
        await _readable(checked, url)
    finally:
        await checked.close()
    store = await open_store(url)
    try:
        running = await store.open_turn(conversation_id)
        if running is not None and not stop:
            print(
                f"turnkeeper: conversation {conversation_id} has a turn that is not done "
                f"({running}); --stop stops it and deletes the conversation"
            )
            return 1
        if running is not None:
            await store.request_cancel(running)
            await stop_waiting(store, running)
        try:
            deleted = await store.delete_conversation(conversation_id, stop=stop)
        except Busy:
            print(f"turnkeeper: a turn of {conversation_id} was asked meanwhile; try again")
            return 1
    finally:
        await store.close()
    if not deleted:
        raise ConfigError(f"the store at {redact_url(url)} has no conversation {conversation_id}")
    print(f"deleted conversation {conversation_id}")
    return 0


async def _feedback(url: str, since: float) -> list[str]:
    from ..store import open_store

    store = await open_store(url, read_only=True)
    try:
        await _readable(store, url)
        given = await store.feedback(since)
    finally:
        await store.close()
    return [
        json.dumps(
            {
                "turn_id": f.turn_id,
                "conversation_id": f.conversation_id,
                "rating": f.rating,
                "comment": f.comment,
                "at": datetime.fromtimestamp(f.at, UTC).isoformat(),
                "outcome": f.outcome,
                "user": f.user,
                "locale": f.locale,
                "question": f.question,
            },
            ensure_ascii=False,
        )
        for f in given
    ]


def since_time(given: str | None, now: float) -> float:
    """`--since` as Unix seconds: an age before `now` (`30m`, `24h`, `7d`), or an ISO date
    or time (UTC unless it names its offset); 0 without one."""
    if given is None:
        return 0.0
    age = DURATION.fullmatch(given.strip())
    if age:
        return now - float(age[1]) * UNITS[age[2]]
    try:
        when = datetime.fromisoformat(given.strip())
    except ValueError:
        raise ConfigError(
            f"--since {given!r} is neither a time (2026-12-01, 2026-12-01T09:30) nor an age "
            "(30m, 24h, 7d)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _existing(database: str | None) -> str:
    """The store's URL; `ConfigError` for a SQLite file that is not there (opening it would
    make an empty one)."""
    from ..store import DEFAULT_URL, parse_url

    url = database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
    parsed = parse_url(url)
    if parsed.scheme == "sqlite" and not Path(parsed.target).is_file():
        raise ConfigError(f"there is no SQLite database at {parsed.target}")
    return url
