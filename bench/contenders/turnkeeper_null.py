"""turnkeeper's `run_turn` with hooks that keep nothing (no store, nobody watching)."""

from __future__ import annotations

from .. import fake
from . import turnkeeper_loop


def make(spec: fake.Spec) -> fake.Turn:
    return turnkeeper_loop.make(spec, hooks=turnkeeper_loop.NullHooks)
