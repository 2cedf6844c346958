"""Fixtures every test gets: no real provider is ever called.

Provider keys and base URLs are removed from the environment, and sockets may
connect only to this machine: a test that would reach a real model API fails.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.providers.wire_server import WireServer
from turnkeeper.store import Store, open_store

PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "TURNKEEPER_PROVIDER",
    "TURNKEEPER_MODEL",
    "TURNKEEPER_DATABASE_URL",
    "TURNKEEPER_PRICES",
)


def _is_local(address: Any) -> bool:
    if isinstance(address, str | bytes):  # a Unix socket path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_real_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_local(address):
            raise RuntimeError(f"tests may not connect to {address!r}: only this machine")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(address):
            raise RuntimeError(f"tests may not connect to {address!r}: only this machine")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture(autouse=True)
def _shipped_prices() -> Iterator[None]:
    """Every test starts from the shipped price table (the CLI may set another)."""
    from turnkeeper.observe import prices

    prices.use(None)
    yield
    prices.use(None)


@pytest.fixture
def server() -> Iterator[WireServer]:
    """The model's wire server, which the official SDK clients talk to over a real socket
    (the web tests' own `server` is the served widget)."""
    wire = WireServer()
    wire.start()
    yield wire
    wire.close()


# ---- stores: every store test runs on SQLite and on PostgreSQL --------------------


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    from tests.databases import test_database

    with test_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'turnkeeper.db'}"
        return
    from tests.databases import fresh_schema

    with fresh_schema(request.getfixturevalue("postgres_database")) as url:
        yield url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    """An open, migrated store of each kind."""
    opened = await open_store(store_url)
    yield opened
    await opened.close()
