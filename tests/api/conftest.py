"""What the API tests share: a queue that holds turns until the test runs them, and a
client of the app on either store (a test file may make its own app instead)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.api.test_routes import HeldQueue, client_for
from turnkeeper.api import create_app
from turnkeeper.store import Store


@pytest.fixture
def held() -> HeldQueue:
    return HeldQueue()


@pytest.fixture
async def client(store: Store, held: HeldQueue) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(create_app(store, held)) as c:
        yield c
