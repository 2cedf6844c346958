"""turnkeeper's `run_turn` as `serve` runs it in memory: hooks that keep nothing, its GC policy.

The policy (`turnkeeper.gc_policy`, applied by `serve` and `worker` at start)
is applied when the contender is built, after its imports: start-up's objects
are frozen, young collections come every 50,000 allocations.
"""

from __future__ import annotations

from turnkeeper.service import gc_policy

from .. import fake
from . import turnkeeper_loop


def make(spec: fake.Spec) -> fake.Turn:
    gc_policy.apply()
    return turnkeeper_loop.make(spec, hooks=turnkeeper_loop.NullHooks)
