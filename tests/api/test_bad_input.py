"""Bad input gets a 4xx with the JSON error body: no 500, no traceback, the connection kept.

The app runs under httpx's ASGI transport with `raise_app_exceptions=True`: an
exception that escapes the app (what makes uvicorn log a traceback and drop the
connection) fails the test instead of being turned into a 500 quietly.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.api.test_routes import HeldQueue, conversation, start_turn
from turnkeeper.api import create_app
from turnkeeper.store import Store


@pytest.fixture
async def strict(store: Store) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(store, HeldQueue()), raise_app_exceptions=True)
    async with httpx.AsyncClient(transport=transport, base_url="http://turnkeeper.test") as c:
        yield c


def assert_client_error(response: httpx.Response, status: int, says: str) -> None:
    assert response.status_code == status, response.text
    assert list(response.json()) == ["error"]
    assert says in response.json()["error"]
    assert "Traceback" not in response.text


DEEP = b'{"text": ' + b"[" * 1000 + b"]" * 1000 + b"}"
WIDE_INTEGER = b'{"text": "hi", "n": ' + b"7" * 5000 + b"}"


@pytest.mark.parametrize(
    ("body", "says"),
    [(DEEP, "nested too deeply"), (WIDE_INTEGER, "not valid JSON")],
    ids=["nested-1000-deep", "integer-5000-digits"],
)
async def test_small_malformed_bodies_get_400(
    strict: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, body: bytes, says: str
) -> None:
    conversation_id, auth = await conversation(strict)
    path = f"/api/conversations/{conversation_id}/turns"
    with caplog.at_level(logging.ERROR):
        response = await strict.post(path, content=body, headers=auth)
    assert_client_error(response, 400, says)
    assert not caplog.records, "bad input is not a server error worth a traceback"
    assert (await strict.post(path, json={"text": "still fine"}, headers=auth)).status_code == 202


@pytest.mark.parametrize("after", ["²", "①", "١", "１", "٣٤", " 1", "1 "])
async def test_an_after_that_is_not_ascii_digits_gets_400(
    strict: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, after: str
) -> None:
    turn_id, auth = await start_turn(strict)
    with caplog.at_level(logging.ERROR):
        response = await strict.get(f"/api/turns/{turn_id}", params={"after": after}, headers=auth)
    assert_client_error(response, 400, '"after"')
    assert not caplog.records


@pytest.mark.parametrize("odd_id", ["\x00", "t_\x00", "\ud800", "x" * 5000])
async def test_odd_ids_answer_404(strict: httpx.AsyncClient, odd_id: str) -> None:
    _, auth = await conversation(strict)
    quoted = "".join(f"%{b:02X}" for b in odd_id.encode("utf-8", "surrogatepass"))
    response = await strict.get(f"/api/turns/{quoted}", headers=auth)
    assert_client_error(response, 404, "No turn")
    response = await strict.post(f"/api/turns/{quoted}/cancel", headers=auth)
    assert_client_error(response, 404, "No turn")
    response = await strict.get(f"/api/conversations/{quoted}", headers=auth)
    assert_client_error(response, 404, "No conversation")


async def test_405_says_which_methods_are_allowed(strict: httpx.AsyncClient) -> None:
    turn_id, auth = await start_turn(strict)
    cases = [
        ("DELETE", "/api/conversations", {"GET", "HEAD", "POST", "OPTIONS"}),
        ("DELETE", f"/api/turns/{turn_id}", {"GET", "HEAD", "OPTIONS"}),
        ("GET", f"/api/turns/{turn_id}/cancel", {"POST", "OPTIONS"}),
        ("PUT", "/api/conversations/c_x/turns", {"POST", "OPTIONS"}),
        ("PUT", "/api/conversations/c_x", {"GET", "HEAD", "DELETE", "PATCH", "OPTIONS"}),
    ]
    for method, path, allowed in cases:
        response = await strict.request(method, path, headers=auth)
        assert_client_error(response, 405, "not allowed")
        assert {m.strip() for m in response.headers["allow"].split(",")} == allowed, path


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
async def test_a_body_that_is_not_declared_json_gets_415(
    strict: httpx.AsyncClient, content_type: str
) -> None:
    conversation_id, auth = await conversation(strict)
    path = f"/api/conversations/{conversation_id}/turns"
    response = await strict.post(
        path, content=b'{"text": "hi"}', headers={**auth, "content-type": content_type}
    )
    assert_client_error(response, 415, "application/json")
    assert (
        await strict.post(path, json={"text": "nothing queued"}, headers=auth)
    ).status_code == 202


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"]
)
async def test_json_content_types_are_accepted(
    strict: httpx.AsyncClient, content_type: str
) -> None:
    conversation_id, auth = await conversation(strict)
    response = await strict.post(
        f"/api/conversations/{conversation_id}/turns",
        content=b'{"text": "hi"}',
        headers={**auth, "content-type": content_type},
    )
    assert response.status_code == 202
