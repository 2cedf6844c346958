"""`/metrics` of a `turnkeeper worker` process (`--metrics-port`) and of `serve`, over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.test_server import demo_turn, free_port, output, turnkeeper, until_up
from tests.waiting import eventually
from turnkeeper.observe.metrics import Metrics
from turnkeeper.serving.server import _counting


def sample(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


async def test_a_worker_serves_its_metrics_and_logs_json(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    port, metrics_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    with fresh_schema(postgres_database) as url:
        serve_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
        serve = ("serve", "--no-worker", "--database", url, "--port", str(port), "--public-metrics")
        worker = (
            "worker", "--database", url, "--metrics-port", str(metrics_port),
            "--log-format", "json", "--provider", "demo",
        )  # fmt: skip
        with turnkeeper(*serve, log=serve_log) as server:
            await until_up(base, server, serve_log)
            with turnkeeper(*worker, log=worker_log):
                state = await demo_turn(base)
                finished = 'turnkeeper_turns_total{outcome="finished"} 1.0'
                text = await scrape(f"http://127.0.0.1:{metrics_port}/metrics", finished)
                served = await scrape(f"{base}/metrics", "turnkeeper_turns_open")
    assert state["status"] == "finished", output(worker_log)
    assert sample(text, "turnkeeper_turns_total", outcome="finished") == 1
    assert sample(text, "turnkeeper_model_calls_total", outcome="ok") == 2
    assert sample(text, "turnkeeper_model_call_duration_seconds_count") == 2
    assert sample(text, "turnkeeper_tool_calls_total", tool="read_file", outcome="ok") == 1
    assert sample(text, "turnkeeper_turns_in_flight") == 0
    assert sample(text, "turnkeeper_sweeper_finalised_total") == 0
    assert sample(served, "turnkeeper_turns_open", status="running") == 0
    lines = [line for line in output(worker_log).splitlines() if line.strip()]
    assert lines, "the worker logged something"
    assert all(json.loads(line)["level"] for line in lines), "every log line is JSON"


async def test_serve_keeps_metrics_off_its_public_port_unless_asked(tmp_path: Path) -> None:
    """`/metrics` is on `--metrics-port`, the store's counts included; the public port
    answers it 404, and serves it only with `--public-metrics`."""
    port, metrics_port = free_port(), free_port()
    base, log = f"http://127.0.0.1:{port}", tmp_path / "serve.log"
    database = f"sqlite:///{tmp_path / 'serve.db'}"
    serve = ("serve", "--database", database, "--port", str(port))
    with turnkeeper(*serve, "--metrics-port", str(metrics_port), log=log) as server:
        await until_up(base, server, log)
        state = await demo_turn(base)
        finished = 'turnkeeper_turns_total{outcome="finished"} 1.0'
        await scrape(f"http://127.0.0.1:{metrics_port}/metrics", finished)
        counted = 'turnkeeper_turns_open{status="running"}'
        text = await scrape(f"http://127.0.0.1:{metrics_port}/metrics", counted)
        async with httpx.AsyncClient() as client:
            public = await client.get(f"{base}/metrics")
    with turnkeeper(*serve, "--public-metrics", log=log) as server:
        await until_up(base, server, log)
        served = await scrape(f"{base}/metrics", "turnkeeper_turns_open")
    assert state["status"] == "finished", output(log)
    assert sample(text, "turnkeeper_turns_total", outcome="finished") == 1
    assert public.status_code == 404
    assert sample(text, "turnkeeper_turns_open", status="running") == 0
    assert sample(served, "turnkeeper_turns_open", status="running") == 0


async def scrape(url: str, until: str = "") -> str:
    """The metrics text at `url` once it holds `until` (the final write comes before the count)."""
    seen: list[str] = []

    async def holds() -> bool:
        try:
            async with httpx.AsyncClient() as client:
                response = await client.get(url)
        except httpx.TransportError:
            return False
        seen.append(response.text)
        return response.status_code == 200 and until in response.text

    await eventually(holds, f"{until!r} at {url}", bound=30)
    return seen[-1]


async def test_counts_that_cannot_be_read_are_said_once_and_again_when_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database away for many rounds is one warning, and one line when it answers."""
    down: list[dict[str, int] | Exception] = [OSError("down")] * 5
    answers = [*down, {"queued": 1}]

    class Flaky:
        async def counts(self) -> dict[str, int]:
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
            if isinstance(answer, Exception):
                raise answer
            return answer

    metrics = Metrics()
    counting = asyncio.create_task(_counting(Flaky(), metrics, 0.001))  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="turnkeeper"):

        async def read_again() -> bool:
            return any("again" in r.getMessage() for r in caplog.records)

        await eventually(read_again, "the counts read again")
    counting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await counting
    said = [r.getMessage() for r in caplog.records if "counts" in r.getMessage()]
    assert said == [
        "the store's counts could not be read for /metrics: down",
        "the store's counts are read for /metrics again",
    ]
