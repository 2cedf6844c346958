"""The compaction workload's conversation, the same for every contender.

Turn N asks "Please read the notes for day N."; the model calls the one tool,
`read_notes`, whose result is ~2 KB of notes, then answers in a line. Each turn
adds ~600 tokens (as `window_api.count` counts them) to the history, so a
20,000-token window is full after ~30 turns unless something keeps the requests
inside it.
"""

from __future__ import annotations

MODEL = "claude-sonnet-4-5"
CHAT_MODEL = "gpt-4o"
KEY = "bench-not-a-key"
TOOL = "read_notes"
DESCRIPTION = "Read the day's notes."
NOTES = ("These are the notes of the day; the parcel left the depot on time. " * 30)[:2000]
"""About 2,000 characters: what `read_notes` returns every time."""


def question(n: int) -> str:
    """Turn `n`'s question (from 1): it names its day, which is how the fake bills it."""
    return f"Please read the notes for day {n}."


def notes() -> str:
    return NOTES
