"""turnkeeper's turns through `TurnJob` and the PostgreSQL store."""

from __future__ import annotations

import os

from .. import fake
from . import turnkeeper_store

PENDING = (
    None
    if os.environ.get(turnkeeper_store.URLS["postgres"])
    else "not run: no PostgreSQL server answered"
)


def make(spec: fake.Spec) -> fake.Turn:
    return turnkeeper_store.make(spec, "postgres")
