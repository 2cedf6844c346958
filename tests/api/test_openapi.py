"""The OpenAPI document: generated from the API's types, and the responses conform to it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any, get_type_hints

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.requests import Request

from tests import scripts
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.api.openapi import (
    DOCUMENT,
    MAX_AFTER,
    Bubble,
    State,
    Transcript,
    TranscriptMessage,
)
from turnkeeper.api.openapi import Usage as DeclaredUsage
from turnkeeper.outcomes import Outcome, Status, TurnStatus
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.state import Bubble as PublishedBubble
from turnkeeper.state import PublishedState, Role
from turnkeeper.store import Store
from turnkeeper.store.sqlite import SqliteStore
from turnkeeper.usage import Usage

CHECKS = [response_schema_conformance, status_code_conformance, content_type_conformance]
SUPPRESS = list(HealthCheck)


class KeptQueue:
    """Turns queued by the generated requests are kept, not run."""

    async def enqueue(self, turn_id: str) -> None:
        pass


def signed_in_by_header(request: Request) -> str | None:
    """Readers sign in with an `x-user` header (the generated requests send none: 401s)."""
    return request.headers.get("x-user")


@pytest.mark.parametrize("authenticate", [None, signed_in_by_header], ids=["tokens", "users"])
def test_every_response_conforms_to_the_document(
    tmp_path: Path, authenticate: Callable[[Request], str | None] | None
) -> None:
    store = SqliteStore(tmp_path / "api.db")
    asyncio.run(store.migrate())
    app = create_app(store, KeptQueue(), authenticate=authenticate)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    checked = []
    for found in schema.get_all_operations():
        operation = found.ok()  # type: ignore[union-attr]

        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, database=None, suppress_health_check=SUPPRESS)
        def conforms(case: Any) -> None:
            case.call_and_validate(checks=CHECKS)

        conforms()
        checked.append(operation.label)
    asyncio.run(store.close())
    assert len(checked) == sum(len(methods) for methods in DOCUMENT["paths"].values()), checked


def test_the_document_states_what_the_code_enforces() -> None:
    schemas = DOCUMENT["components"]["schemas"]
    text = schemas["TurnRequest"]["properties"]["text"]
    assert text["minLength"] == 1
    pattern = re.compile(text["pattern"].replace("\\u0000", "\\x00"))
    assert not pattern.search(" \t\n"), "a blank text is refused"
    assert not pattern.search("a\x00b"), "a NUL character is refused"
    assert pattern.search(" what's on my todo list? ")
    # JSON Schema's patterns are ECMA-262's, whose \\s is not Python's (nor str.isspace's):
    # schemathesis generated "\x1d" as a valid text, which the API refuses as blank.
    assert not re.search(r"\\[sSdDwW]", text["pattern"]), "no class that differs between them"
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert [c for c in spaces if pattern.search(c * 2)] == [], "blank as the API means it"
    assert pattern.search("\ufeff"), "not blank to the API (ECMA-262's \\s has it)"
    after = DOCUMENT["paths"]["/api/turns/{turn_id}"]["get"]["parameters"][1]
    assert after["schema"] == {"type": "integer", "minimum": 0, "maximum": MAX_AFTER}
    statuses = {*schemas["Status"]["enum"], *schemas["Outcome"]["enum"]}
    assert statuses == {*Status, *Outcome}, "every status a turn can have"


def test_the_served_state_is_the_published_state_field_for_field() -> None:
    assert set(State.model_fields) == {f.name for f in fields(PublishedState)}
    assert set(Bubble.model_fields) == {f.name for f in fields(PublishedBubble)}


def test_the_state_and_the_document_type_status_role_and_usage_alike() -> None:
    """One source for both: the state's `status` and `role` are the aliases the document's
    models use, and its usage is the `Usage` the document declares field for field."""
    published = get_type_hints(PublishedState)
    assert published["status"] == TurnStatus == State.model_fields["status"].annotation
    role: object = Role  # a typing form, compared as a value
    assert get_type_hints(PublishedBubble)["role"] == role == Bubble.model_fields["role"].annotation
    assert published["usage"] is Usage
    assert State.model_fields["usage"].annotation is DeclaredUsage


async def test_a_served_state_and_transcript_validate_against_the_document(store: Store) -> None:
    provider = ScriptedProvider([scripts.answer("hello")])
    job = TurnJob(store, provider)
    transport = httpx.ASGITransport(app=create_app(store, LocalQueue(job)))
    async with httpx.AsyncClient(transport=transport, base_url="http://t.test") as client:
        created = (await client.post("/api/conversations")).json()
        auth = {"authorization": f"Bearer {created['token']}"}
        conversation = f"/api/conversations/{created['conversation_id']}"
        queued = await client.post(f"{conversation}/turns", json={"text": "hi"}, headers=auth)
        turn = f"/api/turns/{queued.json()['turn_id']}"

        async def done() -> bool:
            return bool((await client.get(turn, headers=auth)).json()["done"])

        await eventually(done, "the turn finishing")
        state = State.model_validate((await client.get(turn, headers=auth)).json())
        assert [m.text for m in state.messages] == ["hi", "hello"]
        transcript = (await client.get(conversation, headers=auth)).json()
        assert [TranscriptMessage.model_validate(m).id for m in transcript["messages"]] == [
            "m1",
            "m2",
        ]


def test_the_served_usage_is_declared_field_for_field_cost_included() -> None:
    assert set(DeclaredUsage.model_fields) == {f.name for f in fields(Usage)}
    priced = Usage(2, 1_000, 200, cost_usd=0.0135).as_dict()
    assert DeclaredUsage.model_validate(priced).cost_usd == 0.0135
    assert DeclaredUsage.model_validate(Usage().as_dict()).cost_usd is None, "unpriced: absent"
    assert Transcript.model_fields["usage"].annotation is DeclaredUsage
    usage = DOCUMENT["components"]["schemas"]["Usage"]
    assert "cost_usd" in usage["properties"]
    assert "cost_usd" not in usage["required"]
