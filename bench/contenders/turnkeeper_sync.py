"""turnkeeper's `run_turn` with the trivial tool written as a sync function (run in a thread)."""

from __future__ import annotations

from .. import fake
from . import turnkeeper_loop


def make(spec: fake.Spec) -> fake.Turn:
    return turnkeeper_loop.make(spec, sync=True)
