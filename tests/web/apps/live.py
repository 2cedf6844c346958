"""An assistant for the live widget's browser tests: a tool that runs until the test lets it
finish (`gate`: a file the test creates), so the reader's view of a running step can be
looked at (the test waits on the page, never on a sleep); the readers do not sign in (the
widget sends its conversation's token, the event stream included).
"""

from __future__ import annotations

import time
from pathlib import Path

from turnkeeper import Assistant, tool

GATE_BOUND = 30.0
"""Seconds the tool waits for its gate at most."""


@tool
def slow_lookup(gate: str) -> str:
    """Look something up; it takes until `gate` exists.

    Args:
        gate: the file whose existence lets the look-up finish
    """
    deadline = time.monotonic() + GATE_BOUND
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # a tool of one's own, run in a thread: it may block
    return "the parcel left the depot"


assistant = Assistant(
    name="Live desk",
    instructions="You look things up for the reader.",
    tools=[slow_lookup],
    captions={"slow_lookup": {"en": "Looked it up", "es": "Lo consultó"}},
)
