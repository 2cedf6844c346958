"""The API describes itself truly (issue 52.6), point by point: `OPTIONS` and a `405` list
every method a path has; the protocols' request schemas refuse what their handlers refuse
(`{}` first); the event streams are `text/event-stream` of declared events; a malformed
`?after=` is `400` even beside a `Last-Event-ID`."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema_rs
import pytest

from tests.api.test_routes import start_turn
from turnkeeper.api.contract import served
from turnkeeper.store import Store


def methods(allow: str) -> set[str]:
    return {m.strip() for m in allow.split(",")}


async def test_options_and_405_list_every_method_of_a_path(client: httpx.AsyncClient) -> None:
    r = await client.options("/api/conversations/c_any")
    assert r.status_code == 204
    assert methods(r.headers["allow"]) == {"GET", "HEAD", "DELETE", "PATCH", "OPTIONS"}
    r = await client.put("/api/conversations/c_any")
    assert r.status_code == 405
    assert {"GET", "DELETE", "PATCH"} <= methods(r.headers["allow"])
    r = await client.options("/api/chat")
    assert (r.status_code, methods(r.headers["allow"])) == (204, {"POST", "OPTIONS"})


def validator(path: str) -> Any:
    document = served(False)
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return jsonschema_rs.Draft202012Validator(schema["schema"])


QUESTION = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
ASKED = {"id": "m1", "role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("path", "refused", "accepted"),
    [
        (
            "/api/ag-ui",
            [
                {},
                {"threadId": "t", "runId": "r"},
                {"threadId": "t", "runId": "r", "messages": [{}]},
            ],
            {"threadId": "t", "runId": "r", "messages": [ASKED]},
        ),
        (
            "/api/chat",
            [{}, {"id": "c", "messages": []}, {"id": "c", "messages": [{**QUESTION, "parts": []}]}],
            {"id": "c", "messages": [QUESTION]},
        ),
    ],
)
def test_the_protocols_schemas_require_what_their_handlers_require(
    path: str, refused: list[Any], accepted: Any
) -> None:
    check = validator(path)
    for body in refused:
        assert not check.is_valid(body), body
    assert check.is_valid(accepted)
    if path == "/api/ag-ui":  # no new question: the conversation is loaded (its snapshot)
        assert check.is_valid({"threadId": "t", "runId": "r", "messages": []})


def test_every_stream_is_declared_as_text_event_stream_events() -> None:
    paths = served(True)["paths"]
    streams = [
        paths["/api/turns/{turn_id}/events"]["get"],
        paths["/api/ag-ui"]["post"],
        paths["/api/chat"]["post"],
        paths["/api/chat/{chat_id}/stream"]["get"],
    ]
    for operation in streams:
        event = operation["responses"]["200"]["content"]["text/event-stream"]["schema"]
        assert event["type"] == "object"
        assert "data" in event["properties"]
        assert "429" in operation["responses"], "a reader over their streams"


async def test_a_malformed_after_is_400_beside_a_last_event_id(
    store: Store, client: httpx.AsyncClient
) -> None:
    turn_id, auth = await start_turn(client)
    r = await client.get(
        f"/api/turns/{turn_id}/events",
        params={"after": "-1"},
        headers={**auth, "last-event-id": "3"},
    )
    assert r.status_code == 400
