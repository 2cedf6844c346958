"""OpenTelemetry: one trace per turn, with the GenAI semantic conventions.

    invoke_agent                      the turn; its status follows the outcome
    ├── chat {model}                  one per model call
    └── execute_tool {name}           one per tool call

Spans go through `opentelemetry-api` (the `otel` extra) to whatever tracer
provider the application configured; with none configured, turns are not
traced at all. Spans carry no content (questions, answers, tool arguments)
unless `content=True`; a call's error text is redacted (`credentials.redact_text`).
Usage follows the conventions: `gen_ai.usage.input_tokens` includes the prompt
cache's reads and writes, which `gen_ai.usage.cache_read.input_tokens` and
`gen_ai.usage.cache_creation.input_tokens` count apart.
"""

from __future__ import annotations

import json
from typing import Any

from ..credentials import redact_text
from ..errors import MissingExtra
from ..outcomes import Ending, Status
from ..usage import Usage
from ..wire import ToolUse
from .watched import CallEnd, TurnInfo

try:
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, StatusCode
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("tracing", "otel") from e

TRACER = "turnkeeper"


def configured() -> Telemetry | None:
    """Telemetry on the global tracer provider, if the application has set one."""
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None
    return Telemetry()


class Telemetry:
    """A `Watcher` that writes spans; `tracer_provider` defaults to the global one."""

    def __init__(self, tracer_provider: Any = None, *, content: bool = False) -> None:
        self.tracer = trace.get_tracer(TRACER, tracer_provider=tracer_provider)
        self.content = content

    def turn(self, info: TurnInfo) -> TurnSpans:
        return TurnSpans(self.tracer, info, self.content)


class TurnSpans:
    """The spans of one turn."""

    def __init__(self, tracer: trace.Tracer, info: TurnInfo, content: bool) -> None:
        self.tracer = tracer
        self.info = info
        self.content = content
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": info.provider,
            "gen_ai.conversation.id": info.conversation_id,
            "turnkeeper.turn_id": info.turn_id,
        }
        if info.model:
            attributes["gen_ai.request.model"] = info.model
        if content:
            attributes["turnkeeper.question"] = info.question
        self.span = tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, attributes=attributes)
        self.context = trace.set_span_in_context(self.span)
        self.calls: dict[int, Span] = {}
        self.tools: dict[str, Span] = {}
        self.pieces = 0
        """Pieces of answer text streamed over the turn's run (`turnkeeper.deltas`)."""
        self.compactions = 0
        self.cleared = 0

    def call_started(self, iteration: int) -> None:
        model = self.info.model or "unknown"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.info.provider,
        }
        if self.info.model:
            attributes["gen_ai.request.model"] = self.info.model
        self.calls[iteration] = self.tracer.start_span(
            f"chat {model}", context=self.context, kind=SpanKind.CLIENT, attributes=attributes
        )

    def call_ended(self, call: CallEnd) -> None:
        span = self.calls.pop(call.iteration, None)
        if span is None:
            return
        if call.model:
            span.set_attribute("gen_ai.response.model", call.model)
        if call.usage is not None:
            span.set_attributes(usage_attributes(call.usage))
        if call.finish_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [call.finish_reason])
        if self.content and call.text:
            span.set_attribute("turnkeeper.answer", call.text)
        if call.first_text is not None:
            span.set_attribute("turnkeeper.time_to_first_delta", call.first_text)
        if call.pieces:
            span.set_attribute("turnkeeper.deltas", call.pieces)
            self.pieces += call.pieces
        if call.error is not None:
            error = redact_text(call.error)  # the exporter's edge: whatever made the text
            span.set_attribute("error.type", error.split(":", 1)[0])
            span.set_status(StatusCode.ERROR, error)
        span.end()

    def tool_started(self, use: ToolUse) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": use.name,
            "gen_ai.tool.call.id": use.id,
        }
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = _text(use.input)
        self.tools[use.id] = self.tracer.start_span(
            f"execute_tool {use.name}", context=self.context, attributes=attributes
        )

    def tool_ended(self, use: ToolUse, is_error: bool) -> None:
        span = self.tools.pop(use.id, None)
        if span is None:
            return
        if is_error:
            span.set_status(StatusCode.ERROR, "the tool answered with an error")
        span.end()

    def turn_ended(self, end: Ending, usage: Usage) -> None:
        if end.has_error:
            self.span.set_status(StatusCode.ERROR, end.outcome.value)
        else:
            self.span.set_status(StatusCode.OK)
        self._close(end.outcome.value, usage)

    def turn_waiting(self, usage: Usage) -> None:
        """The span ends with the `waiting` status (`turnkeeper.outcome`); the job that
        resumes the turn has a span of its own."""
        self.span.set_status(StatusCode.OK)
        self._close(Status.WAITING.value, usage)

    def compacted(self, summarised: int, cleared: int) -> None:
        """An event on the turn's span; its totals when it ends."""
        self.compactions += 1
        self.cleared += cleared
        self.span.add_event(
            "turnkeeper.compaction",
            {"turnkeeper.summarised_turns": summarised, "turnkeeper.cleared_tool_results": cleared},
        )

    def _close(self, status: str, usage: Usage) -> None:
        for span in [*self.calls.values(), *self.tools.values()]:
            span.end()
        self.span.set_attribute("turnkeeper.outcome", status)
        self.span.set_attribute("turnkeeper.deltas", self.pieces)
        if self.compactions:
            self.span.set_attribute("turnkeeper.compactions", self.compactions)
            self.span.set_attribute("turnkeeper.cleared_tool_results", self.cleared)
        self.span.set_attributes(usage_attributes(usage))
        if usage.cost_usd is not None:
            self.span.set_attribute("turnkeeper.cost_usd", usage.cost_usd)
        self.span.end()


def usage_attributes(usage: Usage) -> dict[str, int]:
    """The GenAI conventions' usage attributes: `input_tokens` counts the cached tokens
    too, and the cache's reads and writes are told apart."""
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
    }


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
