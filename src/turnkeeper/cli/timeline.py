"""A turn's timeline: one row per model call, and totals, as `turnkeeper trace show` prints it.

Rows come from a trace file's call records or from the per-iteration records
the store keeps; either way a row holds the stop reason (or the error's type,
or that a stop aborted the call), the input and output tokens, the seconds the
call took (what it ran, if it was cut off), the tools it called and the seconds
they took, the activity caption key of the tool it asked for, and its cost when
the model's price is known. The totals' cost is known when some call answered
and every call that did is priced (a turn that made no call cost nothing); their
two times add up to the turn's wall time, but for the loop's own microseconds.
A row's input tokens are every input token the call sent, as the GenAI
conventions and OpenAI count them; `cache_creation_input_tokens` and
`cache_read_input_tokens` say how many of them the prompt cache wrote (at
1.25×) and gave back (at 0.1×), the rest was billed at the input price.
The input column's growth (`+in`) shows the history getting longer, the one
cost that compounds with every iteration; the cache columns show how little of
it is paid in full.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..observe import prices
from ..store.records import ModelCall
from ..usage import Usage, count
from ..wire import Json

COUNTED = ("fallback", "advisor_tool_result")
"""Block types a row counts: a model that gave way to another mid-response, an advisor's
answer; kept in the history, never shown as text."""
KINDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
"""A row's token counts: `input_tokens` is every input token sent (`Usage.prompt_tokens`)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the timeline: a model call's ending, tokens, seconds, tools, caption and
    cost; `to_json()` is its object in `trace show --json`."""

    iteration: int | None
    stop_reason: str | None
    error: str | None
    """The error's message, if the call failed."""
    error_type: str | None
    stopped: bool
    """A stop aborted the call."""
    decision: str | None
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int
    seconds: float
    tool_seconds: float
    tools: tuple[str, ...]
    activity: str | None
    """The caption key of the tool the call asked for (or a caption resolved)."""
    model: str | None
    cost_usd: float | None
    waiting: bool = False
    """The turn waited for a person after the call."""
    resumed: str | None = None
    """Why the turn resumed just before the call, on a job's first call."""
    streamed: bool = False
    """The provider streamed the call's answer text as it arrived."""
    compacted: str | None = None
    """What was compacted just before the call (tool results cleared, turns summarised)."""
    stop_details: Json = None
    """Why the model stopped, as its response said beyond the stop reason (a refusal's
    `category` and `explanation`)."""
    blocks: tuple[tuple[str, int], ...] = ()
    """How many blocks of each `COUNTED` type the response held (a fallback, an advisor)."""

    def to_json(self) -> Json:
        """The row's object, its fields in the order `trace show --json` has always printed."""
        data: Json = {
            "iteration": self.iteration,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "error_type": self.error_type,
            "stopped": self.stopped,
            "decision": self.decision,
            **{kind: getattr(self, kind) for kind in KINDS[:3]},
            "output_tokens": self.output_tokens,
            "seconds": self.seconds,
            "tool_seconds": self.tool_seconds,
            "tools": list(self.tools),
            "activity": self.activity,
            "model": self.model,
            "cost_usd": self.cost_usd,
        }
        if self.waiting:
            data["waiting"] = True
        if self.resumed is not None:
            data["resumed"] = self.resumed
        if self.streamed:
            data["streamed"] = True
        if self.compacted is not None:
            data["compacted"] = self.compacted
        if self.stop_details is not None:
            data["stop_details"] = self.stop_details
        if self.blocks:
            data["blocks"] = dict(self.blocks)
        return data

    def count(self, kind: str) -> int:
        """The row's tokens of `kind` (one of `KINDS`)."""
        value: int = getattr(self, kind)
        return value


@dataclass(frozen=True, slots=True)
class Totals:
    """The rows summed: calls, tokens, seconds (the calls' and the tools'), and the cost."""

    iterations: int
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int
    seconds: float
    tool_seconds: float
    cost_usd: float | None

    def to_json(self) -> Json:
        """The totals' object in `trace show --json`."""
        return {
            "iterations": self.iterations,
            **{kind: getattr(self, kind) for kind in KINDS},
            "seconds": self.seconds,
            "tool_seconds": self.tool_seconds,
            "cost_usd": self.cost_usd,
        }


def row(call: ModelCall, wire: str = "anthropic") -> Row:
    """A timeline row from one model call, as its trace recorded it."""
    usage = call.usage or Usage()
    model = call.model
    if model is None and isinstance(call.response, dict):
        answered = call.response.get("model")
        model = answered if isinstance(answered, str) else None
    cost = usage.cost_usd
    if call.error is not None:
        cost = None
    elif cost is None:  # a trace from before costs were kept: its price now
        cost = prices.current().cost(usage, model, wire)
    found = _row(
        iteration=call.iteration,
        stop_reason=call.stop_reason,
        error=None if call.error is None else call.error.get("message"),
        error_type=None if call.error is None else call.error.get("kind"),
        stopped=call.stopped is True,
        decision=call.decision,
        usage=usage,
        seconds=call.duration,
        tool_seconds=call.tools_duration,
        tools=call.tools or [],
        caption=call.caption,
        model=model,
        cost=cost,
        resumed=call.resumed,
        streamed=call.streamed,
        compacted=call.compacted,
    )
    if not isinstance(call.response, dict):
        return found
    details = call.response.get("stop_details")
    details = details if isinstance(details, dict) else None
    return replace(found, stop_details=details, blocks=_counted(call.response.get("content")))


def _counted(content: Any) -> tuple[tuple[str, int], ...]:
    """How many blocks of each `COUNTED` type `content` holds, those it holds."""
    kinds = (
        [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    )
    return tuple((kind, kinds.count(kind)) for kind in COUNTED if kind in kinds)


def stored_row(summary: Mapping[str, Any]) -> Row:
    """A timeline row from a call's record as the store keeps it (`ModelCall.summary()`)."""
    cost = summary.get("cost_usd")
    return _row(
        iteration=summary.get("iteration"),
        stop_reason=summary.get("stop_reason"),
        error=summary.get("error"),
        error_type=summary.get("error_type"),
        stopped=summary.get("decision") == "stopped",
        decision=summary.get("decision"),
        usage=Usage(**{kind: count(summary.get(kind)) for kind in KINDS}),
        seconds=summary.get("seconds", 0.0),
        tool_seconds=summary.get("tools_seconds"),
        tools=summary.get("tools", []),
        caption=summary.get("caption", summary.get("activity")),
        model=summary.get("model"),
        cost=float(cost) if isinstance(cost, int | float) else None,
        resumed=resumed if isinstance(resumed := summary.get("resumed"), str) else None,
        streamed=summary.get("streamed") is True,
        compacted=compacted if isinstance(compacted := summary.get("compacted"), str) else None,
    )


def _row(
    *,
    iteration: int | None,
    stop_reason: str | None,
    error: str | None,
    error_type: str | None,
    stopped: bool,
    decision: str | None,
    usage: Usage,
    seconds: float,
    tool_seconds: float | None,
    tools: Sequence[str],
    caption: str | None,
    model: str | None,
    cost: float | None,
    resumed: str | None = None,
    streamed: bool = False,
    compacted: str | None = None,
) -> Row:
    """A row; a turn that waited for a person after the call says `waiting`, and the first
    call of a job that resumed it says why (`resumed`)."""
    return Row(
        iteration=iteration,
        stop_reason=stop_reason,
        error=error,
        error_type=error_type,
        stopped=stopped,
        decision=decision,
        input_tokens=usage.prompt_tokens,
        cache_creation_input_tokens=usage.cache_creation_input_tokens,
        cache_read_input_tokens=usage.cache_read_input_tokens,
        output_tokens=usage.output_tokens,
        seconds=round(float(seconds), 3),
        tool_seconds=round(float(tool_seconds or 0.0), 3),
        tools=tuple(tools),
        activity=caption,
        model=model,
        cost_usd=cost,
        waiting=decision == "waiting",
        resumed=resumed,
        streamed=streamed,
        compacted=compacted,
    )


def rows(calls: Sequence[ModelCall], wire: str = "anthropic") -> list[Row]:
    """The rows of a trace's model calls."""
    return _captioned_once([row(call, wire) for call in calls])


def stored_rows(summaries: Sequence[Mapping[str, Any]]) -> list[Row]:
    """The rows of a stored turn's calls (`Store.iterations`)."""
    return _captioned_once([stored_row(summary) for summary in summaries])


def _captioned_once(timeline: list[Row]) -> list[Row]:
    """Each caption on the call that asked for its tool only (the loop carries a caption
    on to the calls after it, for the waiting reader)."""
    carried: str | None = None
    own: list[Row] = []
    for r in timeline:
        own.append(replace(r, activity=_own_caption(r, carried)))
        carried = r.activity
    return own


def _own_caption(r: Row, carried: str | None) -> str | None:
    """The row's caption if its call asked for a tool, or used one that changed the caption
    (a server tool's), not if it only carries on the one before it."""
    return r.activity if r.tools or r.activity != carried else None


def totals(timeline: Sequence[Row]) -> Totals:
    """The rows summed: calls, tokens, seconds (the calls' and the tools'), and the cost,
    unknown if any billed call's is."""
    # A call that failed, or never answered (cut off in flight), has no tokens to price.
    billed = (r for r in timeline if r.error is None and (r.input_tokens or r.output_tokens))
    # The total is known when every call with tokens is priced; unknown when no call has
    # any (as the published usage's cost), unless the turn made no call at all.
    costs = [r.cost_usd for r in billed] or ([None] if timeline else [])
    known = [c for c in costs if c is not None]
    tokens = {kind: sum(r.count(kind) for r in timeline) for kind in KINDS}
    return Totals(
        iterations=len(timeline),
        **tokens,
        seconds=round(sum(r.seconds for r in timeline), 3),
        tool_seconds=round(sum(r.tool_seconds for r in timeline), 3),
        cost_usd=None if len(known) < len(costs) else round(sum(known), 10),
    )


def to_json(timeline: Sequence[Row]) -> Json:
    """What `trace show --json` prints: the rows and their totals."""
    return {"iterations": [r.to_json() for r in timeline], "totals": totals(timeline).to_json()}


def render(timeline: Sequence[Row], outcome: str | None) -> str:
    """The timeline as a table: a header, one line per call, and a totals line."""
    lines = [
        f"{'#':>3}  {'stop reason or error':<28} {'in':>7} {'+in':>7} {'cache w':>7} "
        f"{'cache r':>7} {'out':>6} {'seconds':>8} {'tools s':>8} {'cost $':>9}  "
        f"{'activity':<22} tools"
    ]
    previous: int | None = None
    for r in timeline:
        stop = _ending(r)
        answered = _answered(r)
        growth = "" if previous is None or not answered else f"{r.input_tokens - previous:+d}"
        previous = r.input_tokens if answered else previous
        if r.resumed:
            lines.append(f"{'':>3}  resumed {r.resumed}")
        if r.compacted:
            lines.append(f"{'':>3}  compacted the request: {r.compacted}")
        lines.append(
            f"{r.iteration!s:>3}  {str(stop)[:28]:<28} {r.input_tokens:>7} {growth:>7} "
            f"{_tokens_of(r)} {r.seconds:>8.3f} {r.tool_seconds:>8.3f} "
            f"{_dollars(r.cost_usd):>9}  "
            f"{r.activity or '':<22} {', '.join(r.tools)}"
        )
        lines += _said(r)
        if r.waiting:
            lines.append(f"{'':>3}  waited for a person's decision")
    t = totals(timeline)
    lines.append(
        f"{'all':>3}  {'outcome: ' + str(outcome):<28} {t.input_tokens:>7} {'':>7} "
        f"{_tokens_of(t)} {t.seconds:>8.3f} {t.tool_seconds:>8.3f} "
        f"{_dollars(t.cost_usd):>9}"
    )
    return "\n".join(lines)


def _said(r: Row) -> list[str]:
    """The lines under a call's row: its stop details, the counted blocks it held."""
    lines = []
    if isinstance(r.stop_details, dict):
        said = [
            str(r.stop_details.get(k)) for k in ("category", "explanation") if r.stop_details.get(k)
        ]
        lines.append(f"{'':>3}  stop details: {'; '.join(said) or r.stop_details}")
    if r.blocks:
        lines.append(f"{'':>3}  blocks: {', '.join(f'{k} {n}' for k, n in r.blocks)}")
    return lines


def _ending(r: Row) -> str:
    """What a call's stop-reason column says: its error's type (its message in a record from
    before the type was kept) if it failed, `stopped` if a stop aborted it, `cut short` if
    it never answered otherwise (its task was cancelled), else its stop reason."""
    if r.error is not None:
        return f"error: {r.error_type or r.error}"
    if r.stopped:
        return "stopped"
    if not _answered(r):
        return "cut short"
    return f"{r.stop_reason},streamed" if r.streamed else str(r.stop_reason)  # one column


def _answered(r: Row) -> bool:
    """The call answered: it has tokens counted, and its input a growth to show."""
    cut_short = r.stop_reason is None and r.decision is None
    return r.error is None and not r.stopped and not cut_short


def _tokens_of(r: Row | Totals) -> str:
    """A row's cache write, cache read and output columns."""
    return f"{r.cache_creation_input_tokens:>7} {r.cache_read_input_tokens:>7} {r.output_tokens:>6}"


def _dollars(cost: float | None) -> str:
    return "?" if cost is None else f"{cost:.4f}"
