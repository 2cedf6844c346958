"""The clock a turn reads: monotonic seconds, injected so tests and replay control time."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]
"""Monotonic seconds; injected so tests and replay control time."""

monotonic: Clock = time.monotonic
