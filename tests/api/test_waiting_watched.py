"""A turn that waits for a person is not in flight: the in-flight gauge goes back when it
starts to wait, and its span ends with the `waiting` status (turn/lifecycle.py), through
the HTTP API with public metrics, on both stores."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from tests import scripts
from tests.api.test_approvals import SCRIPT, Ran
from tests.api.test_routes import client_for, start_turn
from turnkeeper.api import create_app
from turnkeeper.observe.metrics import Metrics
from turnkeeper.observe.telemetry import Telemetry
from turnkeeper.observe.watchers import Watchers
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store
from turnkeeper.turn.resume import Resuming

TURNS = 3


async def gauge(client: httpx.AsyncClient, name: str, **labels: str) -> float | None:
    response = await client.get("/metrics")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


async def until(client: httpx.AsyncClient, turn_id: str, auth: dict[str, str], status: str) -> None:
    from tests.waiting import eventually

    async def reached() -> bool:
        body = (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()
        return bool(body["status"] == status)

    await eventually(reached, f"the turn to be {status}")


async def test_a_waiting_turn_is_not_in_flight_and_its_span_ends_waiting(store: Store) -> None:
    metrics = Metrics()
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedProvider([SCRIPT[0]] * TURNS + [scripts.answer("Done.")] * TURNS)
    job = TurnJob(
        store,
        model,
        Ran().toolset(),
        resuming=Resuming(needs_approval=frozenset({"delete_file"})),
        watcher=Watchers([metrics, Telemetry(tracing)]),
    )
    queue = LocalQueue(job)
    app = create_app(store, queue, metrics=metrics, public_metrics=True)
    async with client_for(app) as client:
        turns = []
        for _ in range(TURNS):
            turn_id, auth = await start_turn(client, "delete my notes")
            await until(client, turn_id, auth, "waiting")
            turns.append((turn_id, auth))
        await queue.join()
        assert await gauge(client, "turnkeeper_turns_in_flight") == 0, "waiting is not in flight"
        spans = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
        assert [(s.attributes or {}).get("turnkeeper.outcome") for s in spans] == ["waiting"] * 3
        for turn_id, auth in turns:
            decided = await client.post(
                f"/api/turns/{turn_id}/approvals",
                json={"tool_use_id": "toolu_delete", "approved": True},
                headers=auth,
            )
            assert decided.status_code == 202
            await until(client, turn_id, auth, "finished")
        await queue.join()
        assert await gauge(client, "turnkeeper_turns_in_flight") == 0
        finished = await gauge(client, "turnkeeper_turns_total", outcome="finished")
        assert finished == TURNS
    await queue.close()
    spans = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    outcomes = [(s.attributes or {}).get("turnkeeper.outcome") for s in spans]
    assert outcomes == ["waiting"] * TURNS + ["finished"] * TURNS
