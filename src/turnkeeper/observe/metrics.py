"""Metrics: Prometheus counters, gauges and histograms of the turns a process runs.

Each `Metrics` has its own `CollectorRegistry` (never the global default), so
an application, a worker and every test hold their own. It is a `Watcher`:
give it to `TurnJob` (or `run_turn`) and it counts what the turns do; the
sweeper counts the turns it finalises. `serve` exposes it at `/metrics`,
`worker --metrics-port PORT` on a port of its own.
"""

from __future__ import annotations

import threading
from typing import Any
from wsgiref.simple_server import WSGIServer

from ..errors import MissingExtra
from ..outcomes import Ending, Outcome, Status
from ..usage import Usage
from ..wire import ToolUse
from .watched import CallEnd, TurnInfo

try:
    import prometheus_client as prometheus
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("metrics", "server") from e

CONTENT_TYPE = prometheus.CONTENT_TYPE_LATEST

TOKEN_KINDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_write": "cache_creation_input_tokens",
    "cache_read": "cache_read_input_tokens",
}
"""`turnkeeper_tokens_total{kind}` by `Usage` field: `input` is what was billed at the input
price; the prompt cache's writes and reads are apart from it, whatever the provider, so the
kinds add up to every token sent and received."""

DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180)
FIRST_TEXT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30)
DELTA_BUCKETS = (0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500)


class Metrics:
    """The process's instruments, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = prometheus.CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turns = prometheus.Counter(
            "turnkeeper_turns", "Turns that ended, by outcome.", ["outcome"], registry=r
        )
        for outcome in Outcome:
            self.turns.labels(outcome.value)
        self.model_calls = prometheus.Counter(
            "turnkeeper_model_calls", "Model calls, answered or failed.", ["outcome"], registry=r
        )
        self.call_duration = prometheus.Histogram(
            "turnkeeper_model_call_duration_seconds",
            "How long model calls took.",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.tokens = prometheus.Counter(
            "turnkeeper_tokens", "Tokens the model calls used, by kind.", ["kind"], registry=r
        )
        for kind in TOKEN_KINDS:
            self.tokens.labels(kind)
        self.cost = prometheus.Counter(
            "turnkeeper_cost_usd", "What priced model calls cost, in US dollars.", registry=r
        )
        self.tool_calls = prometheus.Counter(
            "turnkeeper_tool_calls", "Tool calls, by tool and outcome.", ["tool", "outcome"],
            registry=r,
        )  # fmt: skip
        self.in_flight = prometheus.Gauge(
            "turnkeeper_turns_in_flight", "Turns running in this process now.", registry=r
        )
        self.first_text, self.deltas = _streaming(r)
        self.compactions, self.cleared = _compactions(r)
        self.swept = prometheus.Counter(
            "turnkeeper_sweeper_finalised",
            "Turns the sweeper finalised after their worker's lease expired.",
            registry=r,
        )
        self.open = prometheus.Gauge(
            "turnkeeper_turns_open",
            "Turns not done yet, by status, as the store holds them (all processes).",
            ["status"],
            registry=r,
        )
        self.unclaimed = _unclaimed(r)
        self.feedback = _feedback(r)

    def turn(self, info: TurnInfo) -> TurnCounts:
        self.in_flight.inc()
        return TurnCounts(self)

    def store_counts(self, counts: dict[str, int]) -> None:
        """Set the `turnkeeper_turns_open` gauge from the store's counts by status."""
        for status in Status:
            self.open.labels(status.value).set(counts.get(status.value, 0))

    def exposition(self) -> bytes:
        """The Prometheus text of every instrument."""
        return bytes(prometheus.generate_latest(self.registry))


class TurnCounts:
    """What one turn adds to the process's metrics."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.ended = False
        self.pieces = 0

    def call_started(self, iteration: int) -> None:
        pass

    def call_ended(self, call: CallEnd) -> None:
        m = self.metrics
        outcome = "error" if call.error is not None else "stopped" if call.stopped else "ok"
        m.model_calls.labels(outcome).inc()
        m.call_duration.observe(max(0.0, call.seconds))
        self.pieces += call.pieces
        if call.first_text is not None:
            m.first_text.observe(call.first_text)
        if call.usage is None:
            return
        for kind, name in TOKEN_KINDS.items():
            m.tokens.labels(kind).inc(getattr(call.usage, name))
        if call.usage.cost_usd:
            m.cost.inc(call.usage.cost_usd)

    def tool_started(self, use: ToolUse) -> None:
        pass

    def tool_ended(self, use: ToolUse, is_error: bool) -> None:
        self.metrics.tool_calls.labels(use.name, "error" if is_error else "ok").inc()

    def turn_ended(self, end: Ending, usage: Usage) -> None:
        if self.ended:
            return
        self.ended = True
        self.metrics.turns.labels(end.outcome.value).inc()
        self.metrics.deltas.observe(self.pieces)
        self.metrics.in_flight.dec()

    def turn_waiting(self, usage: Usage) -> None:
        """Not in flight any more: the job that resumes it counts it again (and its end)."""
        if self.ended:
            return
        self.ended = True
        self.metrics.in_flight.dec()

    def compacted(self, summarised: int, cleared: int) -> None:
        _compacted(self.metrics, summarised, cleared)


def _compacted(metrics: Metrics, summarised: int, cleared: int) -> None:
    """A compaction: the steps it took, the tool results it cleared."""
    if cleared:
        metrics.compactions.labels("cleared").inc()
        metrics.cleared.inc(cleared)
    if summarised:
        metrics.compactions.labels("summarised").inc()


def _compactions(r: Any) -> tuple[Any, Any]:
    """The instruments of compaction: requests compacted by step, tool results cleared."""
    compactions = prometheus.Counter(
        "turnkeeper_compactions",
        "Requests compacted to stay within the model's context window, by step.",
        ["step"],
        registry=r,
    )
    for step in ("cleared", "summarised"):
        compactions.labels(step)
    cleared = prometheus.Counter(
        "turnkeeper_cleared_tool_results",
        "Old tool results sent as a placeholder to stay within the context window.",
        registry=r,
    )
    return compactions, cleared


def _unclaimed(r: Any) -> Any:
    """`turnkeeper_turns_unclaimed`, which the sweeper sets (sweeper.py)."""
    return prometheus.Gauge(
        "turnkeeper_turns_unclaimed",
        "Queued turns no worker of their assistant has claimed for unclaimed_after seconds,"
        " as this process's sweeper last found them.",
        registry=r,
    )


def _feedback(r: Any) -> Any:
    """Readers' ratings (`POST /api/turns/{id}/feedback`), counted by the API's process."""
    return prometheus.Counter(
        "turnkeeper_feedback",
        "Readers' ratings of answers, by rating, the turn's outcome and model (a changed"
        " rating counts again, under its new rating).",
        ["rating", "outcome", "model"],
        registry=r,
    )


def _streaming(r: Any) -> tuple[Any, Any]:
    """The instruments of streamed text: time to the first piece, pieces per turn."""
    first_text = prometheus.Histogram(
        "turnkeeper_time_to_first_delta_seconds",
        "From a streamed model call's start to its first piece of answer text.",
        buckets=FIRST_TEXT_BUCKETS,
        registry=r,
    )
    deltas = prometheus.Histogram(
        "turnkeeper_deltas_per_turn",
        "Pieces of answer text the model streamed in one turn's run.",
        buckets=DELTA_BUCKETS,
        registry=r,
    )
    return first_text, deltas


def serve_metrics(
    metrics: Metrics, port: int, host: str = "127.0.0.1"
) -> tuple[WSGIServer, threading.Thread]:
    """Serve `/metrics` on `host:port` from a daemon thread (prometheus_client's own server).
    The server and its thread; `server.shutdown()` stops it."""
    return prometheus.start_http_server(port, addr=host, registry=metrics.registry)
