"""What a summary of the earlier conversation is asked with, and how it is sent after.

Pure text, on either wire format: the turns to summarise are written out as a
transcript (the user's words, the assistant's, each tool it used and what the tool
answered, a long result cut), after the previous summary when there is one, so the
new summary stands for everything before it and nothing said early is lost by
construction (docs/design.md §2, "Compaction").
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..wire import Message, WireFormat

ASK = (
    "You are compacting a conversation between a user and an assistant so that it can go"
    " on within the model's context window. Write a summary that the assistant will read"
    " instead of the conversation below. Keep every fact the user gave or a tool found"
    " (names, numbers, codes, dates, what files say), the decisions made, the user's"
    " preferences and every task still open. Leave out greetings and repetition. Write in"
    " the conversation's language, as notes, at most {words} words. Answer with the summary"
    " only."
)
"""What the summariser is told; `{words}` is the longest summary that leaves room."""

HEAD = (
    "[Summary of the earlier conversation, which was compacted to stay within the model's"
    " context window:]\n"
)
"""The start of the message that stands for the summarised turns in a request."""

AFTER = "[The conversation goes on from there:]\n"
"""Between the summary and the first question kept word for word, in the same message."""

RESULT_CHARS = 1_500
"""A tool result is cut to this many characters in the transcript a summary is asked of."""


def asked(previous: str | None, transcript: str, words: int) -> str:
    """The summariser's one message: what to do, the previous summary, the turns after it."""
    parts = [ASK.format(words=words)]
    if previous:
        parts.append(f"<previous_summary>\n{previous}\n</previous_summary>")
    parts.append(f"<conversation>\n{transcript}\n</conversation>")
    return "\n\n".join(parts)


def transcript(messages: Sequence[Message], wire: WireFormat, names: dict[str, str]) -> str:
    """`messages` written out for a summariser: who said what, which tool ran with what
    input, and what it answered (cut to `RESULT_CHARS`)."""
    lines: list[str] = []
    for m in messages:
        role = m.get("role")
        answered = role in ("user", "tool") or m.get("type") == "function_call_output"
        results = wire.recorded_results([m]) if answered else {}
        if results:
            for use_id, result in results.items():
                text = result.content
                if len(text) > RESULT_CHARS:
                    text = f"{text[:RESULT_CHARS]} […{len(text) - RESULT_CHARS} characters cut]"
                lines.append(f"Result of {names.get(use_id, 'a tool')}: {text}")
            continue
        text = wire.message_text(m).strip()
        if text:
            lines.append(f"{'User' if role == 'user' else 'Assistant'}: {text}")
        for use in wire.tool_uses(m):
            given = json.dumps(use.input, ensure_ascii=False)
            lines.append(f"Assistant used {use.name} with {given}")
    return "\n".join(lines)


def cut(text: str, size: int) -> str:
    """`text` in at most about `size` characters: its start and its end, what is between
    them said to be cut (one turn too long for a summary's request)."""
    if len(text) <= size:
        return text
    half = max(size // 2, 1)
    return f"{text[:half]}\n[…{len(text) - 2 * half} characters cut…]\n{text[-half:]}"


def summary_message(wire: WireFormat, summary: str, question: str | None) -> Message:
    """The message a request starts with in place of the turns the summary stands for: the
    summary, then the question of the first turn kept word for word, in one user message
    (some chat templates refuse two user messages in a row)."""
    if question is None:
        return wire.user_message(HEAD + summary)
    return wire.user_message(f"{HEAD}{summary}\n\n{AFTER}{question}")


def placeholder(name: str, size: int) -> str:
    """What a cleared tool result is sent as: what it was, and that the tool can be called
    again."""
    return (
        f"[This result of {name} ({size} characters) was cleared to keep the conversation"
        f" within the model's context window. Call {name} again if you need it.]"
    )
