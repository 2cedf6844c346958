"""turnkeeper's turns through `TurnJob` and the SQLite store."""

from __future__ import annotations

import os

from .. import fake
from . import turnkeeper_store

PENDING = None if os.environ.get(turnkeeper_store.URLS["sqlite"]) else "not run: no store URL"


def make(spec: fake.Spec) -> fake.Turn:
    return turnkeeper_store.make(spec, "sqlite")
