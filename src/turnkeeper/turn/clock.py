"""The turn's clock: every reading kept, so a replay can give them back in order.

The loop, its model calls and its tool rounds read the time through the turn's
`TurnClock`; a trace records the readings (`trace.py`) and `replay.py` hands
them back, so every timeout and every `time_limit` comes out the same.
"""

from __future__ import annotations

from ..budget import Clock


class TurnClock:
    """Reads `clock` and keeps every reading; `started` is the first."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.readings: list[float] = []
        """Every clock reading the turn made, in order."""
        self.started = self.now()

    def now(self) -> float:
        """Read the clock (kept, for the trace)."""
        t = self._clock()
        self.readings.append(t)
        return t

    @property
    def elapsed(self) -> float:
        """Seconds from the turn's start to the clock's last reading."""
        return self.readings[-1] - self.started

    def offsets(self) -> list[float]:
        """The readings, as seconds since the first (as a trace records them)."""
        first = self.readings[0] if self.readings else 0.0
        return [t - first for t in self.readings]
