"""The request a model call sends, kept inside the model's context window.

The history is kept verbatim, always; what a call sends is built from the
conversation's compaction record (`records.Compacted`: a summary, how far it
reaches, up to where tool results are cleared) and the messages after it. A turn
starts from the record the store holds and, when it compacts, hands the new one
to its next write (docs/design.md §2, "Compaction").

Before every model call the request's size is estimated: the last call's real input
tokens (its usage) and its output, plus the characters appended since over
`CHARS_PER_TOKEN`; with no call yet in this job, the characters of the whole request.
Past `at` × the window, the request is compacted, the cheap step first:

1. **clear old tool results**: every result but those of the newest `KEEP_RESULTS`
   messages is sent as a placeholder that says what it was and that the tool can be
   called again (each `tool_use` keeps its `tool_result`, so the request stays valid;
   the current turn's own older results too, which is how a turn whose tools outgrow
   the window goes on);
2. **summarise**, if that is not enough (the estimate is still above `ENOUGH` of the
   trigger): every turn but the current one and the `keep_turns` before it, with the
   previous summary, in one model call (more, one after the other, when they would not
   fit in one request).

A refusal for size (`ContextTooLong`) or a `model_context_window_exceeded` stop
compacts harder (every result but the newest message's, every turn before the
current one) and sends the same call once more (`sent`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..store.records import Compacted
from ..usage import Usage
from ..wire import Json, Message, ToolSpec, WireFormat
from . import summary as asking
from .compaction import Compaction

CHARS_PER_TOKEN = 3.5
"""Characters of a request's JSON per token, a little under what tokenizers give, so the
estimate errs high."""
KEEP_RESULTS = 3
"""Messages of tool results kept whole when old ones are cleared."""
ENOUGH = 0.7
"""Clearing is enough when it brings the estimate under this share of the trigger."""
SUMMARY_SHARE = 0.5
"""The share of the window a request for a summary may use."""
UNKNOWN_WINDOW = 100_000
"""Tokens a summary's request may use when the model's window is unknown."""
OUTPUT_ITEM = "function_call_output"
"""A Responses API tool result: an input item of its own, not a message with a role."""

Summarise = Callable[[str], Awaitable[str | None]]
"""Asks the model for a summary of what it is given: the summary, or None (no time left,
or an empty answer)."""


class Window:
    """One turn's view of the context window: the compaction record it builds each request
    from, the estimate of the next request's size, and the two steps that shrink it."""

    def __init__(
        self,
        settings: Compaction | None,
        record: Compacted | None,
        wire: WireFormat,
        described: Mapping[str, Any],
    ) -> None:
        """`described`: the provider's description (`Provider.describe()`): its model, its
        instructions, whether it compacts on its side."""
        self.settings = settings
        self.on = settings is not None
        """Compaction is on (settings given); read before every call."""
        self.wire = wire
        self.system = described.get("system")
        self.on_server = described.get("server_compaction") is not None
        """The provider compacts on its side (`strategy="server"`): none before a call here."""
        self.record = (record or Compacted()) if settings is not None else Compacted()
        """The record each request is built from (off: none, the whole history is sent)."""
        self.stated = self.record.window
        """The window a refusal stated, in this turn or an earlier one (each record keeps it)."""
        model = described.get("model")
        self.size = None if settings is None else _least(settings.window_for(model), self.stated)
        """The window in tokens; None when unknown (or compaction is off)."""
        self.started = record
        """The record the turn started from (its trace keeps it)."""
        self.changed: Compacted | None = None
        """A record not yet handed to a write."""
        self.known: tuple[int, int] | None = None
        """The tokens of the last request and its reply, and the history's length after it."""
        self.overhead: int | None = None
        """Characters of what every request sends besides the messages (tools, instructions),
        counted before the first estimate."""
        self.calls = 0
        """Model calls of this job that are not the turn's iterations: the summaries, and a
        reply that stopped on the window and was sent again."""
        self._head: list[Message] = []
        self._from = 0
        self._head_of: Compacted | None = None

    def traced(self) -> Json:
        """What the trace's request parameters say of it, so a replay builds the same
        requests: `compaction`, its settings and the record the turn started from (nothing:
        compaction was off)."""
        if self.settings is None:
            return {}
        started = None if self.started is None else self.started.to_json()
        return {"compaction": {"settings": self.settings.as_dict(), "record": started}}

    # ---- the request -------------------------------------------------------------

    def request(self, history: Sequence[Message]) -> Sequence[Message]:
        """What a call sends: the history itself until the conversation is compacted; then
        the summary (with the question it reaches to, so the roles still alternate), the
        cleared messages, and the history after them."""
        record = self.record
        if not (record.reach or record.cleared):
            return history
        if self._head_of is not record:
            self._head, self._from = self._built_head(history, record)
            self._head_of = record
        return [*self._head, *history[self._from :]]

    def _built_head(
        self, history: Sequence[Message], record: Compacted
    ) -> tuple[list[Message], int]:
        """The messages a request starts with, and where the history goes on after them."""
        names, start, head = self._names(history, record.reach), record.reach, []
        if record.summary is not None:
            first = history[start] if start < len(history) else {}
            question = first.get("content") if first.get("role") == "user" else None
            question = question if isinstance(question, str) else None
            start += question is not None
            head.append(asking.summary_message(self.wire, record.summary, question))
        head += [self._cleared(m, names) for m in history[start : record.cleared]]
        return head, max(record.cleared, start)

    def _cleared(self, message: Message, names: dict[str, str]) -> Message:
        """`message` with each tool result it holds as a placeholder (a copy; the history is
        never written to)."""
        if message.get("role") == "tool" or message.get("type") == OUTPUT_ITEM:
            field, key = (
                ("output", "call_id") if message.get("type") else ("content", "tool_call_id")
            )
            name = names.get(str(message.get(key)), "the tool")
            text = self.wire.message_text(message)
            return {**message, field: asking.placeholder(name, len(text))}
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            return message
        blocks = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                name = names.get(str(block.get("tool_use_id")), "the tool")
                text = self.wire.message_text({"content": block.get("content")})
                if isinstance(block.get("content"), str):
                    text = block["content"]
                block = {**block, "content": asking.placeholder(name, len(text))}
            blocks.append(block)
        return {**message, "content": blocks}

    def _names(self, history: Sequence[Message], start: int) -> dict[str, str]:
        """Each tool use's tool by the use's id, from `start` on."""
        return {
            use.id: use.name
            for m in history[start:]
            if m.get("role") == "assistant"
            for use in self.wire.tool_uses(m)
        }

    # ---- the estimate --------------------------------------------------------------

    def seen(self, usage: Usage, length: int, context: int | None = None) -> None:
        """A call's `usage` (its input and output are the next request's start, unless the
        reply says its `context` apart: `Reply.context`); the history is `length` long with
        its reply."""
        size = usage.prompt_tokens + usage.output_tokens if context is None else context
        self.known = (size, length)

    def estimate(self, history: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """The next request's size in tokens, estimated."""
        if self.known is not None:
            tokens, length = self.known
            return tokens + int(_chars(history[length:]) / CHARS_PER_TOKEN)
        if self.overhead is None:
            specs = [(t.name, t.description, t.input_schema) for t in tools]
            system = self.system if isinstance(self.system, str) else ""
            self.overhead = len(json.dumps(specs)) + len(system)
        return int((self.overhead + _chars(self.request(history))) / CHARS_PER_TOKEN)

    def trigger(self) -> int | None:
        """The estimate past which a request is compacted first (None: never before a call)."""
        if self.settings is None or self.size is None or self.on_server:
            return None
        return int(self.settings.at * self.size)

    def over(self, history: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> bool:
        """Whether the next request is to be compacted before it is sent."""
        trigger = self.trigger()
        return trigger is not None and self.estimate(history, tools) > trigger

    # ---- compacting ------------------------------------------------------------------

    async def compact(
        self, history: Sequence[Message], summarise: Summarise, *, forced: bool = False
    ) -> Shrunk | None:
        """Make the next request smaller: clear old tool results, then, if that is not
        enough (always, when `forced` by a refusal), summarise the older turns. What was
        done; None if nothing could be."""
        assert self.settings is not None, "compaction is on"
        was, count = self.record, 0
        cleared = _clear_to(history, was, 1 if forced else KEEP_RESULTS)
        if cleared > max(was.cleared, was.reach):
            count = _results(history[max(was.cleared, was.reach) : cleared])
            self._set(replace(was, cleared=cleared))
        trigger, turns = self.trigger(), 0
        if forced or trigger is None or self.estimate(history) > ENOUGH * trigger:
            keep = 0 if forced else self.settings.keep_turns
            turns = await self._summarised(history, keep, summarise)
        return Shrunk(count, turns) if count or turns else None

    async def _summarised(self, history: Sequence[Message], keep: int, summarise: Summarise) -> int:
        """Summarise every turn from the record's reach up to the current one and the `keep`
        before it, a chunk that fits one request at a time; how many turns were."""
        record = self.record
        starts = _turn_starts(history, record.reach)
        if len(starts) <= keep + 1:
            return 0
        cut, summary, start = starts[-(keep + 1)], record.summary, record.reach
        names = self._names(history, record.reach)
        while start < cut:
            end = self._chunk_end(history, start, cut, starts, names)
            text = asking.cut(
                asking.transcript(history[start:end], self.wire, names), self._budget()
            )
            made = await summarise(asking.asked(summary, text, self._words()))
            if not made:
                break
            summary, start = made, end
        if start == record.reach:
            return 0
        turns = sum(1 for s in starts if s < start)
        self._set(Compacted(start, max(record.cleared, start), summary, record.turns + turns))
        return turns

    def _chunk_end(
        self,
        history: Sequence[Message],
        start: int,
        cut: int,
        starts: Sequence[int],
        names: dict[str, str],
    ) -> int:
        """The furthest turn start up to `cut` whose transcript from `start` fits one
        summary's request (at least one turn)."""
        budget = self._budget()
        ends = [s for s in starts if start < s <= cut]
        best, written = start, 0
        for end in ends:  # each turn written out once: the parts' lengths add up
            written += len(asking.transcript(history[best:end], self.wire, names)) + 1
            if written > budget and best != start:
                break
            best = end
        return best

    def _budget(self) -> int:
        """Characters of transcript one summary's request may hold."""
        return int((self.size or UNKNOWN_WINDOW) * SUMMARY_SHARE * CHARS_PER_TOKEN)

    def _words(self) -> int:
        """The longest summary asked for: a tenth of the window, in words."""
        return max(200, min(2_000, int((self.size or UNKNOWN_WINDOW) / 10)))

    def refused(self, stated: int | None) -> None:
        """A refusal for size stated the window (or did not): it is the window from now on
        (unless a smaller one was given), and the next record keeps it, so later turns
        compact before it rather than be refused again."""
        self.stated, self.size = _least(self.stated, stated), _least(self.size, stated)

    def _set(self, record: Compacted) -> None:
        self.record = self.changed = replace(record, window=self.stated)
        self.known = None  # the request changed: estimated anew from its characters

    def written(self) -> Compacted | None:
        """The record not yet written, for the next write (then None)."""
        changed, self.changed = self.changed, None
        return changed


@dataclass(frozen=True, slots=True)
class Shrunk:
    """What one compaction did: tool results cleared, turns summarised."""

    cleared: int
    summarised: int

    def __str__(self) -> str:
        """As the call log and `trace show` say it."""
        done = []
        if self.cleared:
            done.append(f"cleared {_counted(self.cleared, 'tool result')}")
        if self.summarised:
            done.append(f"summarised {_counted(self.summarised, 'turn')}")
        return "; ".join(done)


def _counted(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def _least(*windows: int | None) -> int | None:
    return min([w for w in windows if w is not None], default=None)


def _chars(messages: Sequence[Message]) -> int:
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in messages)


def _is_results(message: Message) -> bool:
    if message.get("role") == "tool" or message.get("type") == OUTPUT_ITEM:
        return True
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _results(messages: Sequence[Message]) -> int:
    """How many tool results `messages` hold."""
    count = 0
    for m in messages:
        if m.get("role") == "tool" or m.get("type") == OUTPUT_ITEM:
            count += 1
        elif _is_results(m):
            count += sum(
                1 for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
            )
    return count


def _clear_to(history: Sequence[Message], record: Compacted, keep: int) -> int:
    """Where clearing ends: after every message of tool results but the newest `keep`
    (never before where it ended already)."""
    holding = [
        i for i in range(max(record.cleared, record.reach), len(history)) if _is_results(history[i])
    ]
    if len(holding) <= keep:
        return record.cleared
    return holding[-keep - 1] + 1 if keep else holding[-1] + 1


def _turn_starts(history: Sequence[Message], start: int) -> list[int]:
    """Where each turn from `start` on begins: its question, a user message of plain text."""
    return [
        i
        for i in range(start, len(history))
        if history[i].get("role") == "user" and isinstance(history[i].get("content"), str)
    ]
