"""`turnkeeper usage`: a user's (or, without sign-in, the whole assistant's) usage today,
read from the store's ledger as `GET /api/usage` shows it (docs/design.md §13).

    turnkeeper usage --database URL [--user ID] [--app APP]

With `--app`, the assistant's limits for that user are shown beside each use. Reading
changes no database: the store is opened read-only and not migrated.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from datetime import UTC, datetime
from typing import Any

from ..credentials import redact_url
from ..errors import ConfigError
from ..usage import MINUTE, Ledger, Limits, limits_for, today
from .options import directory
from .traces import _readable


def add_usage_command(commands: Any) -> None:
    usage = commands.add_parser(
        "usage", help="a user's usage today (turns in the last minute, tokens, cost)"
    )
    usage.add_argument(
        "--database", metavar="URL", help="the store to read (env TURNKEEPER_DATABASE_URL)"
    )
    usage.add_argument(
        "--user", metavar="ID", help="the signed-in user (default: the whole assistant)"
    )
    usage.add_argument("--app", metavar="APP", help="the assistant (module:attribute): its limits")
    usage.add_argument(
        "--app-dir", type=directory, metavar="DIR", help="import APP from this folder"
    )


def cmd_usage(args: argparse.Namespace) -> int:
    from ..store import DEFAULT_URL, parse_url

    url = args.database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
    parsed = parse_url(url)
    if parsed.scheme == "sqlite" and not os.path.isfile(parsed.target):
        raise ConfigError(f"there is no SQLite database at {parsed.target}")
    limits = _limits(args)
    now = datetime.now(UTC)
    kept = asyncio.run(_read(url, args.user, today(now)))
    print("\n".join(lines(kept, limits, args.user, now)))
    return 0


def _limits(args: argparse.Namespace) -> Limits:
    if args.app is None:
        if args.app_dir is not None:
            raise ConfigError("--app-dir is where --app is imported from; name the APP too")
        return Limits()
    from ..assistant import load

    return limits_for(load(args.app, args.app_dir).limits, args.user) or Limits()


async def _read(url: str, user: str | None, day: str) -> Ledger:
    from ..store import open_store

    store = await open_store(url, read_only=True)  # reading the ledger changes no database
    try:
        await _readable(store, url)
        return await store.ledger(user, day, MINUTE)
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(f"cannot read the ledger at {redact_url(url)}: {e}") from None
    finally:
        await store.close()


def lines(kept: Ledger, limits: Limits, user: str | None, now: datetime) -> list[str]:
    """What `turnkeeper usage` prints: one line per limit, its use, its limit, its reset."""
    shown = kept.to_json(limits, now)
    who = f"user {user}" if user is not None else "the whole assistant (no sign-in)"
    rows = [f"usage of {who} on {shown['day']} (UTC)"]
    for name, label in (
        ("turns_per_minute", "turns in the last minute"),
        ("tokens_per_day", "tokens today"),
        ("cost_per_day", "cost today (USD)"),
    ):
        entry = shown[name]
        used = f"{entry['used']:g}" if name != "cost_per_day" else f"{entry['used']:.6f}"
        limit = "no limit" if entry["limit"] is None else f"of {entry['limit']:g}"
        reset = "" if entry["resets_in"] is None else f"resets in {_span(entry['resets_in'])}"
        rows.append(f"  {label:<26} {used:>12}  {limit:<14} {reset}".rstrip())
    return rows


def _span(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
