"""The wire server every provider test talks to through the official SDK clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.wire_server import WireServer


@pytest.fixture
def server() -> Iterator[WireServer]:
    wire = WireServer()
    wire.start()
    yield wire
    wire.close()
