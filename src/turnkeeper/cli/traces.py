"""`replay` and `trace show`: a recorded turn run again, or read back as rows."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import i18n
from ..credentials import redact_url
from ..errors import ConfigError
from ..store.controlled import Rated
from ..turn.replay import first_difference, replay
from ..turn.trace import read_trace
from . import timeline
from .options import (
    use_prices,
)


def cmd_replay(args: argparse.Namespace) -> int:
    recorded = read_trace(args.trace)
    replayed = asyncio.run(replay(recorded)).trace
    difference = first_difference(recorded, replayed)
    if difference is not None:
        print(f"replay differs: {difference}")
        return 1
    print(f"replay matches: {len(recorded.calls)} model calls, outcome {recorded.outcome.value}")
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    use_prices(args)
    if Path(args.trace).exists() and args.database is None:
        trace = read_trace(args.trace)
        rows = timeline.rows(trace.calls, trace.wire)
        outcome: str | None = trace.outcome.value
        feedback = None
    else:
        url = _stored_turn_url(args.trace, args.database)
        rows, outcome, feedback = asyncio.run(_stored_timeline(args.trace, url))
    if args.json:
        print(json.dumps(timeline.to_json(rows), ensure_ascii=False))
    else:
        catalogs = _catalogs(args)
        locale = i18n.locale_from_env(os.environ, catalogs)
        print(timeline.render(captioned(rows, locale, catalogs), outcome))
        unresolved = sorted(
            {r.activity for r in rows if r.activity} - set(catalogs.catalog(locale))
        )
        if unresolved:
            print(f"({', '.join(unresolved)}: the application's captions; --app APP resolves them)")
        if feedback is not None:
            print(said(feedback))
    return 0


def said(feedback: Rated) -> str:
    """The reader's feedback on the turn, as `trace show` prints it under the table."""
    comment = f" {json.dumps(feedback.comment)}" if feedback.comment else ""
    at = datetime.fromtimestamp(feedback.at, UTC).isoformat(timespec="seconds")
    return f"feedback: {feedback.rating}{comment} ({at})"


def _catalogs(args: argparse.Namespace) -> i18n.Catalogs:
    """The catalogs captions resolve in: `--app`'s (its captions and messages over the
    shipped ones), else the process's own."""
    if getattr(args, "app", None) is None:
        if getattr(args, "app_dir", None) is not None:
            raise ConfigError("--app-dir is where --app is imported from; name the APP too")
        return i18n.PROCESS
    from .loading import load

    return load(args.app, args.app_dir).catalogs


def captioned(
    rows: Sequence[timeline.Row], locale: str, catalogs: i18n.Catalogs = i18n.PROCESS
) -> list[timeline.Row]:
    """The rows with each activity caption key resolved in `locale`; a key `catalogs` lack
    (an application's own caption, without `--app`) stays as it is."""
    return [
        replace(r, activity=r.activity and (catalogs.resolve(r.activity, locale) or r.activity))
        for r in rows
    ]


def _stored_turn_url(turn_id: str, database: str | None) -> str:
    """The URL of the store that holds `turn_id`: --database, else the environment's, else
    the default; `ConfigError` if `turn_id` is no turn id, or the SQLite file is missing
    (opening it would create it: reading a turn never makes a database)."""
    from ..store import DEFAULT_URL, parse_url

    url = database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
    if not re.fullmatch(r"t_[0-9a-f]+", turn_id):
        raise ConfigError(f"{turn_id!r} is neither a trace file nor a turn id")
    parsed = parse_url(url)
    if parsed.scheme == "sqlite" and not Path(parsed.target).is_file():
        raise ConfigError(f"there is no SQLite database at {parsed.target}")
    return url


async def _readable(store: Any, url: str) -> None:
    """`ConfigError` unless the store at `url` holds turnkeeper's tables, all migrated."""
    pending = await store.pending()
    if pending is None:
        raise ConfigError(f"there is no turnkeeper store at {redact_url(url)}")
    if pending:
        raise ConfigError(
            f"the store at {redact_url(url)} is older than this turnkeeper ({pending} "
            "migrations behind); `turnkeeper serve` or `worker` on it migrates it"
        )


async def _stored_timeline(
    turn_id: str, url: str
) -> tuple[list[timeline.Row], str | None, Rated | None]:
    """The timeline of a turn the store at `url` holds."""
    from ..store import open_store

    store = await open_store(url, read_only=True)  # reading a turn changes no database
    try:
        await _readable(store, url)
        turn = await store.turn(turn_id)
        if turn is None:
            raise ConfigError(f"the store at {redact_url(url)} has no turn {turn_id}")
        records = await store.iterations(turn_id)
        state = await store.state_after(turn_id, 0)
        feedback = await store.feedback_of(turn_id)
    finally:
        await store.close()
    outcome = state.get("status") if state is not None else None
    return timeline.stored_rows(records), outcome, feedback
