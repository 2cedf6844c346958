"""The model misbehaves on the wire: every fault ends the turn in a defined outcome.

A `WireServer` on 127.0.0.1 speaks the Messages API to the official
`anthropic` SDK inside `AnthropicProvider`; each turn runs through `TurnJob` on
both stores. For every fault: one terminal state, `done: true`, the failure
reported once (or not at all when the turn finishes), a history valid to send
as the next request, and no request beyond the SDK's documented retries
(`max_retries`, default 2), counted at the server. Each fault is met by a plain
call and by a streamed one (the wire server then sends the body's event
stream, cut or held as the body would be): a stream cut midway is not sent
again, since the SDK retries only until a response has begun.

Every body here is CONSTRUCTED from the Anthropic API reference (Messages
response, error shapes), since no recording shows these faults.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests import scripts
from tests.providers.wire_server import Canned, WireServer, json_response
from turnkeeper import Budget, Outcome
from turnkeeper.observe.report import Report
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store, new_token

RETRIES = 2
"""The SDK's own retries, its default: the only retries there are."""


def error(kind: str, status: int, **headers: str) -> Canned:
    body = {"type": "error", "error": {"type": kind, "message": f"constructed {kind}"}}
    return json_response(body, status, {"request-id": "req_fault", **headers})


def answer(**changes: Any) -> dict[str, Any]:
    body = scripts.answer("the answer")
    body.update(changes)
    return {k: v for k, v in body.items() if v is not DROP}


DROP = object()
OK = {"content-type": "application/json"}


@dataclass(frozen=True)
class Fault:
    name: str
    canned: Callable[[], Canned]
    outcome: Outcome
    key: str | None
    """The message key of the last bubble (None: the model's text)."""
    requests: int
    call_timeout: float = 10
    streamed_requests: int | None = None
    """Requests when the call streams, if not `requests`."""


FAULTS = [
    Fault("429-retry-after", lambda: error("rate_limit_error", 429, **{"retry-after": "1"}),
          Outcome.FAILED, "errors.ai_unavailable", 1 + RETRIES),
    Fault("529-overloaded", lambda: error("overloaded_error", 529), Outcome.FAILED,
          "errors.ai_unavailable", 1 + RETRIES),
    Fault("500-api-error", lambda: error("api_error", 500), Outcome.FAILED,
          "errors.ai_unavailable", 1 + RETRIES),
    Fault("hang", lambda: Canned(hang=True), Outcome.FAILED, "errors.ai_unavailable", 1,
          call_timeout=2),
    Fault("body-slower-than-the-call",
          lambda: Canned(200, json.dumps(answer()).encode(), OK, hold=True),
          Outcome.FAILED, "errors.ai_unavailable", 1, call_timeout=2),
    Fault("closed-mid-body",
          lambda: Canned(200, json.dumps(answer()).encode(), OK, cut_after=30),
          Outcome.FAILED, "errors.ai_unavailable", 1 + RETRIES, streamed_requests=1),
    Fault("malformed-json", lambda: Canned(200, b'{"type": "message", "content": [', OK),
          Outcome.FAILED, "errors.ai_failed", 1),
    Fault("missing-usage", lambda: json_response(answer(usage=DROP)), Outcome.FINISHED, None, 1),
    Fault("unknown-stop-reason", lambda: json_response(answer(stop_reason="brand_new_reason")),
          Outcome.FAILED, "errors.ai_failed", 1),
    Fault("unknown-block-type",
          lambda: json_response(answer(content=[
              {"type": "hologram", "frames": [1, 2]},
              {"type": "text", "text": "the answer"},
          ])),
          Outcome.FINISHED, None, 1),
]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_a_fault_ends_the_turn_once_in_a_defined_outcome(
    store: Store, server: WireServer, fault: Fault, stream: bool
) -> None:
    server.add(*(fault.canned() for _ in range(1 + RETRIES)))
    conversation_id = await store.create_conversation(new_token()[1])
    turn_id = (await store.create_turn(conversation_id, "question")).turn_id
    reports: list[Report] = []
    provider = AnthropicProvider(
        api_key="test-key", base_url=server.url, max_retries=RETRIES, stream=stream
    )
    budget = Budget(call_timeout=fault.call_timeout, min_call=1)
    try:
        outcome = await TurnJob(store, provider, budget=budget, reporter=reports.append).run(
            turn_id
        )
    finally:
        await provider.aclose()

    assert outcome is fault.outcome
    requests = fault.streamed_requests if stream and fault.streamed_requests else fault.requests
    assert len(server.requests) == requests, "no request beyond the SDK's retries"
    if stream and (fault.outcome is Outcome.FINISHED or fault.streamed_requests):
        assert server.streams == [0], "answered with the body's event stream"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"]) == (fault.outcome.value, True)
    failures = [r for r in reports if r.event == Outcome.FAILED.value]
    assert len(failures) == (1 if fault.outcome is Outcome.FAILED else 0), reports
    last = state["messages"][-1]
    if fault.key is None:
        assert last == {"id": last["id"], "role": "bot", "text": "the answer"}
    else:
        assert (last.get("key"), last.get("is_error")) == (fault.key, True)
    history = await store.history(conversation_id)
    scripts.assert_valid_history(history)
    assert history[0]["content"] in ("question", [{"type": "text", "text": "question"}])
    if fault.name == "unknown-stop-reason":
        assert "brand_new_reason" in f"{failures[0].stop_reason} {failures[0].message}"
    if fault.name == "unknown-block-type":
        assert {"type": "hologram", "frames": [1, 2]} in history[-1]["content"], "kept verbatim"
    if fault.name == "missing-usage":
        assert state["usage"]["iterations"] == 1
