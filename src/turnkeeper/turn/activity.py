"""The waiting caption: the last tool a step used, as a past-tense message key.

Captions say what just happened ("Read a file"), never what is happening or is
about to: a response's server-side tools ran before it came (`ran`), its client
tools only once their round answered them (`answered`); a tool that waits for a
person's yes has no caption until it ran (its ask is what the reader sees). A name missing from the
table maps to None: a renamed tool shows nothing rather than an internal name.

Your own tools and MCP tools get captions with `captions()`, whose table goes
to `run_turn(..., setting=TurnSetting(activities=...))`:

    activities = captions({
        "get_weather": {"en": "Checked the weather", "es": "Consultó el tiempo"},
        "search_docs": "activity.web_search",     # reuse an existing caption
    })
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .. import i18n
from ..errors import ConfigError
from ..wire import Reply, ToolResult, ToolUse

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


def ran(reply: Reply) -> tuple[str, ...]:
    """The steps that ran with a response: its server-side tools, not the client tool uses
    it asks for (those run after it, in their round)."""
    asked = {u.name for u in reply.tool_uses}
    return tuple(step for step in reply.steps if step not in asked)


def answered(uses: Sequence[ToolUse], results: Sequence[ToolResult]) -> tuple[str, ...]:
    """The tools of `uses` that `results` answer: the client tools that ran."""
    done = {r.tool_use_id for r in results}
    return tuple(u.name for u in uses if u.id in done)


def captions(
    entries: Mapping[str, str | Mapping[str, str]], base: Mapping[str, str] = ACTIVITIES
) -> dict[str, str]:
    """`base` with a caption for each tool in `entries`.

    An entry is either an existing `activity.*` key, or the past-tense caption
    per locale (`en` required; a missing locale falls back to `en`), which is
    added to the catalogs under `activity.<tool name>`.
    """
    table = dict(base)
    for tool, entry in entries.items():
        if isinstance(entry, str):
            key = entry
        else:
            key = f"activity.{tool}"
            _add_texts(tool, key, entry)
        if not key.startswith("activity."):
            raise ConfigError(f"the caption of {tool!r} must be an activity.* key, got {key!r}")
        table[tool] = key
    return table


def _add_texts(tool: str, key: str, texts: Mapping[str, str]) -> None:
    if "en" not in texts:
        raise ConfigError(f"the caption of {tool!r} needs an 'en' text")
    for locale, text in texts.items():
        i18n.add_messages(locale, {key: text})
