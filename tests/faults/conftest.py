"""What the fault tests share: databases of their own, where every connection is the
test's and may be ended, killed or restarted (the model's wire server, `server`, is
every test's: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests import databases
from tests.tcp_proxy import TcpProxy
from turnkeeper.store import Store, open_store


@pytest.fixture
def own_database() -> Iterator[str]:
    """A PostgreSQL database of the test's own, dropped afterwards."""
    with databases.test_database() as url:
        yield url


@pytest.fixture
def proxy(own_database: str) -> Iterator[TcpProxy]:
    """A TCP proxy to the PostgreSQL server, which the test may cut and restore."""
    server = urlsplit(databases.ADMIN_URL)
    with TcpProxy(server.hostname or "127.0.0.1", server.port or 5432) as forwarding:
        yield forwarding


@pytest.fixture
async def pg_store(own_database: str) -> AsyncIterator[Store]:
    """An open store in the test's own PostgreSQL database."""
    opened = await open_store(own_database)
    yield opened
    await opened.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def own_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store of each kind in a database of the test's own: a SQLite file, or a PostgreSQL
    database (not a schema of a shared one: a killed process's connections die with it)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'turnkeeper.db'}"
    else:
        yield request.getfixturevalue("own_database")


@pytest.fixture
async def own_store(own_store_url: str) -> AsyncIterator[Store]:
    """An open store at `own_store_url`."""
    opened = await open_store(own_store_url)
    yield opened
    await opened.close()
