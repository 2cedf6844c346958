"""`/metrics`: Prometheus text, counted from the store so every process sees the same totals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from ..outcomes import Outcome, Status
from ..store import Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render(counts: dict[str, int]) -> str:
    lines = [
        "# HELP turnkeeper_turns_total Turns that ended, by outcome.",
        "# TYPE turnkeeper_turns_total counter",
    ]
    lines += [f'turnkeeper_turns_total{{outcome="{o}"}} {counts.get(o, 0)}' for o in Outcome]
    lines += [
        "# HELP turnkeeper_turns_open Turns not done yet, by status.",
        "# TYPE turnkeeper_turns_open gauge",
    ]
    lines += [f'turnkeeper_turns_open{{status="{s}"}} {counts.get(s, 0)}' for s in Status]
    return "\n".join(lines) + "\n"


def endpoint(store: Store) -> Callable[[Request], Awaitable[Response]]:
    async def metrics(request: Request) -> Response:
        return PlainTextResponse(render(await store.counts()), media_type=CONTENT_TYPE)

    return metrics
