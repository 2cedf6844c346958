"""The prompt-cache workload's turns, the same for every contender.

An assistant with long instructions and eight tool definitions (~6,000 tokens
together, counted as `cache_api.tokens` counts them) reads a case file page
by page: every model call but the last asks for the next page, whose text
(~1,450 characters) and the call asking for it add ~400 tokens to the history.
A second question in the same conversation runs the same way, so the earlier
turn is part of the prefix.
"""

from __future__ import annotations

from typing import Any

MODEL = "claude-sonnet-4-5"
KEY = "bench-not-a-key"
TOOL = "read_page"
QUESTIONS = ("Summarise the case file.", "Now list what is still open in it.")
PAGE_CHARS = 1_450
INSTRUCTION_CHARS = 17_600
DESCRIPTION_CHARS = 600
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"page": {"type": "integer", "description": "The page number, from 1."}},
    "required": ["page"],
    "additionalProperties": False,
}
TOOL_NAMES = (
    TOOL,
    "search_cases",
    "open_order",
    "refund_order",
    "update_address",
    "escalate_case",
    "send_email",
    "close_case",
)


def _filled(opening: str, sentence: str, chars: int) -> str:
    """`opening`, then numbered copies of `sentence`, cut at exactly `chars` characters."""
    parts, n = [opening], 0
    while sum(len(p) for p in parts) < chars:
        n += 1
        parts.append(f" ({n}) {sentence}")
    return "".join(parts)[:chars]


def instructions() -> str:
    """The system prompt: ~4,400 tokens of a support desk's rules."""
    rule = (
        "When a customer writes about an order, look the order up before answering, quote "
        "its number, say what happens next and by when, and never promise a refund that the "
        "policy for that order does not allow."
    )
    return _filled("You are the support desk of Example Shop.", rule, INSTRUCTION_CHARS)


def description(name: str) -> str:
    """A tool's description: ~150 tokens, as real tools' descriptions run."""
    use = (
        f"Use {name} only for what its name says; it answers with plain text that may be "
        "long, and it fails with a message saying why when its input is wrong."
    )
    return _filled(
        f"The {name.replace('_', ' ')} tool of the support desk.", use, DESCRIPTION_CHARS
    )


def page(number: int) -> str:
    """Page `number` of the case file: ~360 tokens of text."""
    entry = "the customer called about a parcel that left the depot but never reached the door"
    return _filled(f"Page {number} of the case file.", entry, PAGE_CHARS)
