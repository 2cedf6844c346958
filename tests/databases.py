"""The databases tests run on: a SQLite file per test, a fresh PostgreSQL schema per test.

PostgreSQL tests need the server on 127.0.0.1:5432 (or `TURNKEEPER_TEST_POSTGRES`,
an admin URL). A run creates its own database and drops it at the end. When
the server is absent the tests skip, with the reason, unless `CI` is set:
under CI they fail instead, so a broken database never passes silently.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, urlsplit

import psycopg
import pytest

ADMIN_URL = os.environ.get(
    "TURNKEEPER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required under CI: {reason}")
    pytest.skip(f"PostgreSQL is not available ({reason}); set CI=1 to make this a failure")


@contextmanager
def test_database() -> Iterator[str]:
    """A database for this test run: its URL; dropped afterwards."""
    name = f"turnkeeper_test_{secrets.token_hex(4)}"
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        _unavailable(str(e).strip().splitlines()[0])
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlsplit(ADMIN_URL)._replace(path=f"/{name}").geturl()
    try:
        yield url
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_schema(database_url: str) -> Iterator[str]:
    """A new schema in the run's database: a store URL whose search_path is that schema."""
    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(database_url, autocommit=True) as db:
        db.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{database_url}?options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(database_url, autocommit=True) as db:
            db.execute(f'DROP SCHEMA "{schema}" CASCADE')


KEPT_APART = ("turnkeeper_migrations", "usage_days", "procrastinate_", "sqlite_")
"""Tables that hold no conversation's rows: the migrations, the ledger's day sums (they
name a subject, never a conversation), procrastinate's queue and SQLite's own."""


def rows_left(url: str) -> dict[str, int]:
    """Every table of the store at `url` with rows, and how many, read from the schema
    itself (so a table added later is counted too), less those `KEPT_APART`."""
    if url.startswith("sqlite:///"):
        import sqlite3

        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
            names = [
                n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            counts = {n: db.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    else:
        with psycopg.connect(url, autocommit=True) as db:
            names = [
                n
                for (n,) in db.execute(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
                )
            ]
            counts = {}
            for n in names:
                row = db.execute(f'SELECT count(*) FROM "{n}"').fetchone()
                counts[n] = row[0] if row is not None else 0
    return {n: c for n, c in counts.items() if c and not n.startswith(KEPT_APART)}


def tables_holding(url: str, text: str) -> list[str]:
    """The tables of the store at `url` with a row whose columns, as text, hold `text`."""
    found = []
    if url.startswith("sqlite:///"):
        import sqlite3

        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
            names = [
                n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            for n in names:
                if any(text in str(v) for row in db.execute(f'SELECT * FROM "{n}"') for v in row):
                    found.append(n)
        return found
    with psycopg.connect(url, autocommit=True) as db:
        names = [
            n
            for (n,) in db.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        ]
        for n in names:
            row = db.execute(
                f'SELECT count(*) FROM "{n}" t WHERE strpos(t::text, %s) > 0', (text,)
            ).fetchone()
            if row is not None and row[0]:
                found.append(n)
    return found
