"""What the provider tests share: adapters pointed at the wire server (`server`, which
every test gets from tests/conftest.py), their connections closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

import pytest

from .wire_server import WireServer

A = TypeVar("A")


class Adapters(Protocol):
    def __call__(self, adapter: Callable[..., A], /, *, path: str = "", **options: Any) -> A:
        """An adapter of that class with a test key and the wire server's URL (+ `path`)."""
        ...


@pytest.fixture
async def adapters(server: WireServer) -> AsyncIterator[Adapters]:
    """Builds adapters pointed at the wire server; closes their connections afterwards."""
    made: list[Any] = []

    def build(adapter: Callable[..., A], /, *, path: str = "", **options: Any) -> A:
        made.append(adapter(api_key="test-key", base_url=f"{server.url}{path}", **options))
        built: A = made[-1]
        return built

    yield build
    for adapter in made:
        await adapter.aclose()
