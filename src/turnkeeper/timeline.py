"""A turn's timeline: one row per model call, and totals, as `turnkeeper trace show` prints it.

Rows come from a trace file's call records or from the per-iteration records
the store keeps; either way a row holds the stop reason (or the error), the
input and output tokens, the seconds the call took, the tools it called and the
seconds they took, the activity caption key it left, and its cost when the
model's price is known. The totals' two times add up to the turn's wall time,
but for the loop's own microseconds.
The input column's growth (`+in`) shows the history getting longer, the one
cost that compounds with every iteration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import prices
from .usage import Usage, count

Row = dict[str, Any]


def row(call: Mapping[str, Any], wire: str = "anthropic") -> Row:
    """A timeline row from one call record: as the loop writes it in a trace, or already
    summarised (tokens and seconds counted, the caption under `caption`)."""
    if "input_tokens" in call:
        return _summarised(call)
    response = call.get("response")
    response = response if isinstance(response, dict) else {}
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    error = call.get("error")
    model = call.get("model") or response.get("model")
    return {
        "iteration": call.get("iteration"),
        "stop_reason": call.get("stop_reason"),
        "error": error.get("message") if isinstance(error, dict) else None,
        "input_tokens": _tokens(usage, "input_tokens", "prompt_tokens"),
        "output_tokens": _tokens(usage, "output_tokens", "completion_tokens"),
        "seconds": round(float(call.get("duration", 0.0)), 3),
        "tool_seconds": round(float(call.get("tools_duration") or 0.0), 3),
        "tools": list(call.get("tools", [])),
        "activity": call.get("caption", call.get("activity")),
        "model": model if isinstance(model, str) else None,
        "cost_usd": _cost(call, response, wire),
    }


def _summarised(call: Mapping[str, Any]) -> Row:
    cost = call.get("cost_usd")
    return {
        "iteration": call.get("iteration"),
        "stop_reason": call.get("stop_reason"),
        "error": call.get("error"),
        "input_tokens": count(call.get("input_tokens")),
        "output_tokens": count(call.get("output_tokens")),
        "seconds": round(float(call.get("seconds", 0.0)), 3),
        "tool_seconds": round(float(call.get("tools_seconds") or 0.0), 3),
        "tools": list(call.get("tools", [])),
        "activity": call.get("caption", call.get("activity")),
        "model": call.get("model"),
        "cost_usd": float(cost) if isinstance(cost, int | float) else None,
    }


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
        "input_tokens": sum(r["input_tokens"] for r in timeline),
        "output_tokens": sum(r["output_tokens"] for r in timeline),
        "seconds": round(sum(r["seconds"] for r in timeline), 3),
        "tool_seconds": round(sum(r["tool_seconds"] for r in timeline), 3),
        "cost_usd": None if None in costs else round(sum(costs), 10),
    }


def render(timeline: Sequence[Row], outcome: str | None) -> str:
    """The timeline as a table: a header, one line per call, and a totals line."""
    lines = [
        f"{'#':>3}  {'stop reason or error':<28} {'in':>7} {'+in':>7} {'out':>6} "
        f"{'seconds':>8} {'tools s':>8} {'cost $':>9}  {'activity':<22} tools"
    ]
    previous: int | None = None
    for r in timeline:
        stop = r["stop_reason"] if r["error"] is None else f"error: {r['error']}"
        growth = "" if previous is None else f"{r['input_tokens'] - previous:+d}"
        previous = r["input_tokens"] if r["error"] is None else previous
        lines.append(
            f"{r['iteration']!s:>3}  {str(stop)[:28]:<28} {r['input_tokens']:>7} {growth:>7} "
            f"{r['output_tokens']:>6} {r['seconds']:>8.3f} {r['tool_seconds']:>8.3f} "
            f"{_dollars(r['cost_usd']):>9}  "
            f"{r['activity'] or '':<22} {', '.join(r['tools'])}"
        )
    t = totals(timeline)
    lines.append(
        f"{'all':>3}  {'outcome: ' + str(outcome):<28} {t['input_tokens']:>7} {'':>7} "
        f"{t['output_tokens']:>6} {t['seconds']:>8.3f} {t['tool_seconds']:>8.3f} "
        f"{_dollars(t['cost_usd']):>9}"
    )
    return "\n".join(lines)


def _dollars(cost: float | None) -> str:
    return "?" if cost is None else f"{cost:.4f}"


def _cost(call: Mapping[str, Any], response: Mapping[str, Any], wire: str) -> float | None:
    """The call's recorded cost, else its price now (traces from before costs were kept)."""
    if call.get("error") is not None:
        return None
    recorded = call.get("cost_usd")
    if isinstance(recorded, int | float):
        return float(recorded)
    model = call.get("model") or response.get("model")
    usage = _usage(response.get("usage"))
    return prices.current().cost(usage, model if isinstance(model, str) else None, wire)


def _usage(raw: Any) -> Usage:
    """Token counts from a response's `usage`, in either wire format."""
    raw = raw if isinstance(raw, dict) else {}
    details = raw.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(
        iterations=1,
        input_tokens=_tokens(raw, "input_tokens", "prompt_tokens"),
        output_tokens=_tokens(raw, "output_tokens", "completion_tokens"),
        cache_creation_input_tokens=count(raw.get("cache_creation_input_tokens")),
        cache_read_input_tokens=count(raw.get("cache_read_input_tokens")) or cached,
    )


def _tokens(usage: Mapping[str, Any], *names: str) -> int:
    for name in names:
        value = count(usage.get(name))
        if value:
            return value
    return 0
