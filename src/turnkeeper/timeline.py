"""A turn's timeline: one row per model call, and totals, as `turnkeeper trace show` prints it.

Rows come from a trace file's call records or from the per-iteration records
the store keeps; either way a row holds the stop reason (or the error), the
input and output tokens, the seconds the call took, the tools it called and the
seconds they took, the activity caption key it left, and its cost when the
model's price is known. The totals' two times add up to the turn's wall time,
but for the loop's own microseconds.
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
from typing import Any

from . import prices
from .providers import chat_api, messages_api
from .usage import Usage, count

Row = dict[str, Any]

KINDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
"""A row's token counts: `input_tokens` is every input token sent (`Usage.prompt_tokens`)."""

USAGE_OF = {"anthropic": messages_api.parse_usage, "openai": chat_api.parse_usage}
"""How each wire format's response `usage` reads, as its adapter reads it."""


def row(call: Mapping[str, Any], wire: str = "anthropic") -> Row:
    """A timeline row from one call record: as the loop writes it in a trace, or already
    summarised (tokens and seconds counted, the caption under `caption`)."""
    if "input_tokens" in call:
        return _summarised(call)
    response = call.get("response")
    response = response if isinstance(response, dict) else {}
    usage = _usage(response.get("usage"), wire)
    error = call.get("error")
    model = call.get("model") or response.get("model")
    return {
        "iteration": call.get("iteration"),
        "stop_reason": call.get("stop_reason"),
        "error": error.get("message") if isinstance(error, dict) else None,
        **_counts(usage),
        "seconds": round(float(call.get("duration", 0.0)), 3),
        "tool_seconds": round(float(call.get("tools_duration") or 0.0), 3),
        "tools": list(call.get("tools", [])),
        "activity": call.get("caption", call.get("activity")),
        "model": model if isinstance(model, str) else None,
        "cost_usd": _cost(call, response, usage, wire),
    } | _waits(call)


def _summarised(call: Mapping[str, Any]) -> Row:
    cost = call.get("cost_usd")
    return {
        "iteration": call.get("iteration"),
        "stop_reason": call.get("stop_reason"),
        "error": call.get("error"),
        **_counts(Usage(**{kind: count(call.get(kind)) for kind in KINDS})),
        "seconds": round(float(call.get("seconds", 0.0)), 3),
        "tool_seconds": round(float(call.get("tools_seconds") or 0.0), 3),
        "tools": list(call.get("tools", [])),
        "activity": call.get("caption", call.get("activity")),
        "model": call.get("model"),
        "cost_usd": float(cost) if isinstance(cost, int | float) else None,
    } | _waits(call)


def _waits(call: Mapping[str, Any]) -> Row:
    """A turn that waited after the call (`waiting`) or resumed before it (`resumed`)."""
    waits: Row = {}
    if call.get("decision") == "waiting":
        waits["waiting"] = True
    if isinstance(call.get("resumed"), str):
        waits["resumed"] = call["resumed"]
    return waits


def rows(calls: Sequence[Mapping[str, Any]], wire: str = "anthropic") -> list[Row]:
    return [row(call, wire) for call in calls]


def totals(timeline: Sequence[Row]) -> Row:
    # A call that failed, or never answered (cut off in flight), has no tokens to price.
    billed = (
        r for r in timeline if r["error"] is None and (r["input_tokens"] or r["output_tokens"])
    )
    costs = [r["cost_usd"] for r in billed]
    return {
        "iterations": len(timeline),
        **{kind: sum(r[kind] for r in timeline) for kind in KINDS},
        "seconds": round(sum(r["seconds"] for r in timeline), 3),
        "tool_seconds": round(sum(r["tool_seconds"] for r in timeline), 3),
        "cost_usd": None if None in costs else round(sum(costs), 10),
    }


def render(timeline: Sequence[Row], outcome: str | None) -> str:
    """The timeline as a table: a header, one line per call, and a totals line."""
    lines = [
        f"{'#':>3}  {'stop reason or error':<28} {'in':>7} {'+in':>7} {'cache w':>7} "
        f"{'cache r':>7} {'out':>6} {'seconds':>8} {'tools s':>8} {'cost $':>9}  "
        f"{'activity':<22} tools"
    ]
    previous: int | None = None
    for r in timeline:
        stop = r["stop_reason"] if r["error"] is None else f"error: {r['error']}"
        growth = "" if previous is None else f"{r['input_tokens'] - previous:+d}"
        previous = r["input_tokens"] if r["error"] is None else previous
        if r.get("resumed"):
            lines.append(f"{'':>3}  resumed {r['resumed']}")
        lines.append(
            f"{r['iteration']!s:>3}  {str(stop)[:28]:<28} {r['input_tokens']:>7} {growth:>7} "
            f"{_tokens_of(r)} {r['seconds']:>8.3f} {r['tool_seconds']:>8.3f} "
            f"{_dollars(r['cost_usd']):>9}  "
            f"{r['activity'] or '':<22} {', '.join(r['tools'])}"
        )
        if r.get("waiting"):
            lines.append(f"{'':>3}  waited for a person's decision")
    t = totals(timeline)
    lines.append(
        f"{'all':>3}  {'outcome: ' + str(outcome):<28} {t['input_tokens']:>7} {'':>7} "
        f"{_tokens_of(t)} {t['seconds']:>8.3f} {t['tool_seconds']:>8.3f} "
        f"{_dollars(t['cost_usd']):>9}"
    )
    return "\n".join(lines)


def _counts(usage: Usage) -> dict[str, int]:
    """A row's token counts from a call's usage (a stored record from before the cache
    was counted has none of it: its input is what it has)."""
    return {
        "input_tokens": usage.prompt_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
    }


def _tokens_of(r: Row) -> str:
    """A row's cache write, cache read and output columns."""
    return (
        f"{r['cache_creation_input_tokens']:>7} {r['cache_read_input_tokens']:>7} "
        f"{r['output_tokens']:>6}"
    )


def _dollars(cost: float | None) -> str:
    return "?" if cost is None else f"{cost:.4f}"


def _cost(
    call: Mapping[str, Any], response: Mapping[str, Any], usage: Usage, wire: str
) -> float | None:
    """The call's recorded cost, else its price now (traces from before costs were kept)."""
    if call.get("error") is not None:
        return None
    recorded = call.get("cost_usd")
    if isinstance(recorded, int | float):
        return float(recorded)
    model = call.get("model") or response.get("model")
    return prices.current().cost(usage, model if isinstance(model, str) else None, wire)


def _usage(raw: Any, wire: str) -> Usage:
    """Token counts from a response's `usage`, read as its wire format's adapter reads them."""
    return USAGE_OF.get(wire, messages_api.parse_usage)(raw if isinstance(raw, dict) else {})
