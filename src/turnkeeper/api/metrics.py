"""`/metrics`: the process's Prometheus instruments, and the store's open turns by status."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from ..observe.metrics import CONTENT_TYPE, Metrics
from ..store import Store


def endpoint(store: Store, metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    """`GET /metrics`: the Prometheus text of `metrics`, with the store's count of turns in each
    status read at each scrape."""

    async def exposition(request: Request) -> Response:
        metrics.store_counts(await store.counts())
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    return exposition
