"""The garbage-collection policy of turnkeeper's own processes (`serve`, `worker`).

With a thousand turns in flight, the cyclic collector is a large share of a
process's CPU: CPython starts a young collection every 700 net allocations of
container objects, and each older collection walks every live container,
including the tens of thousands that importing the frameworks left behind and
that never die. The policy, applied once after start-up:

- collect once, then `gc.freeze()` what is left: the modules, classes and
  functions of start-up move to a permanent generation no collection walks;
- collect the young generation every `YOUNG` allocations instead of 700, so
  that a collection happens per batch of iterations rather than several times
  per iteration; the older generations keep their ratios (`OLDER`).

Garbage is still collected, only in larger batches: memory stays bounded
(`tests/test_gc_policy.py` runs turns in a process under this policy and
watches its resident memory). The price is that up to `YOUNG` containers of
cyclic garbage (and whatever they hold) wait for the next collection instead
of 700; turns themselves leave almost none, a tool that builds reference
cycles around big buffers may. A library that embeds `run_turn` keeps the
interpreter's defaults; this is a choice for a process that turnkeeper owns.

Memory, too, goes back: on glibc the threshold above which an allocation is mapped
apart (and unmapped when freed) is fixed at `MMAP_AT` (glibc raises it after each
large free, up to 32 MiB, so that the megabytes of a large answer, even a refused one
(`max_response`), would stay in the heap for good).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

YOUNG = 50_000
"""Net container allocations between two young collections (CPython's default: 700)."""

OLDER = (20, 10)
"""Young collections per middle one, middle ones per full one (CPython's default: 10, 10)."""


M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter (malloc.h)."""
MMAP_AT = 256 * 1024
"""Bytes from which an allocation is mapped apart, and given back to the system when freed."""


def apply() -> None:
    """Freeze what start-up allocated and collect in larger batches from now on; large
    allocations mapped apart, so their memory goes back when freed."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, *OLDER)
    _map_large_apart()


def _map_large_apart() -> None:
    """Fix glibc's mmap threshold (nothing elsewhere: another libc keeps its own policy)."""
    name = ctypes.util.find_library("c")
    if name is None or "libc.so" not in name:
        return
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_AT)
