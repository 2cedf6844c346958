"""The waiting caption: the last tool a step used, as a past-tense message key.

Server-side tools report a step only once it finished, so captions say what
just happened ("Read a file"), never what is happening. A name missing from the
table maps to None: a renamed tool shows nothing rather than an internal name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ACTIVITIES: Mapping[str, str] = {
    "read_file": "activity.read_file",
    "web_search": "activity.web_search",
    "web_fetch": "activity.web_fetch",
    "code_execution": "activity.code_execution",
    "bash_code_execution": "activity.code_execution",
    "text_editor_code_execution": "activity.code_execution",
    "get_current_time": "activity.get_current_time",
    "convert_time": "activity.convert_time",
}


def caption(steps: Sequence[str], previous: str | None, table: Mapping[str, str]) -> str | None:
    """The caption after a step: its last tool's key; the previous one if it used no tool."""
    if not steps:
        return previous
    return table.get(steps[-1])
