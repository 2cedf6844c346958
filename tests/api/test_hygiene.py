"""HTTP hygiene (docs/design.md §6): every error is `{"error": …}`, CORS rejections
included; no redirect is built from the `Host` header; the page says where scripts may
come from and who may frame it; `/metrics` is public only when asked; the transcript
comes a page at a time."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.requests import Request

from tests import scripts
from tests.api.test_routes import HeldQueue, client_for, conversation
from tests.models import GatedModel
from turnkeeper.api import create_app
from turnkeeper.errors import ConfigError
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store

SHOP = "https://shop.example.com"


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example", "access-control-request-method": "POST"},
        {"origin": SHOP, "access-control-request-method": "PUT"},
        {
            "origin": SHOP,
            "access-control-request-method": "POST",
            "access-control-request-headers": "x-secret",
        },
    ],
    ids=["origin", "method", "header"],
)
async def test_a_refused_cors_preflight_answers_json(
    store: Store, held: HeldQueue, headers: dict[str, str]
) -> None:
    async with client_for(create_app(store, held, cors_origins=[SHOP])) as client:
        response = await client.options("/api/conversations", headers=headers)
        allowed = await client.options(
            "/api/conversations",
            headers={"origin": SHOP, "access-control-request-method": "POST"},
        )
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert list(response.json()) == ["error"]
    assert response.json()["error"].endswith(".")
    assert allowed.status_code == 200, "an allowed preflight is answered as before"
    assert allowed.headers["access-control-allow-origin"] == SHOP


async def test_a_refused_header_is_named_in_the_preflight_answer(
    store: Store, held: HeldQueue
) -> None:
    app = create_app(store, held, cors_origins=[SHOP], cors_headers=["x-user"])
    asked = {"origin": SHOP, "access-control-request-method": "POST"}
    async with client_for(app) as client:
        refused = await client.options(
            "/api/conversations",
            headers={**asked, "access-control-request-headers": "x-user, X-Secret"},
        )
        allowed = await client.options(
            "/api/conversations",
            headers={**asked, "access-control-request-headers": "X-User, content-type"},
        )
    assert refused.status_code == 400
    assert refused.json()["error"] == "These headers may not be sent from another origin: x-secret."
    assert allowed.status_code == 200, "the application's own header is allowed"
    assert "x-user" in allowed.headers["access-control-allow-headers"].split(", ")
    assert "access-control-allow-credentials" not in allowed.headers, "no cookies by default"


async def test_sign_in_across_origins_sends_cookies_to_the_named_origin_only(
    store: Store, held: HeldQueue
) -> None:
    """`--cors-credentials`: the preflight and the answer allow credentials and echo the
    caller's origin, never `*`; the application's sign-in reads its cookie."""

    def signed_in(request: Request) -> str | None:
        return request.cookies.get("session")

    app = create_app(store, held, authenticate=signed_in, cors_origins=[SHOP],
                     cors_credentials=True, cors_headers=["x-user"])  # fmt: skip
    async with client_for(app) as client:
        preflight = await client.options(
            "/api/conversations",
            headers={
                "origin": SHOP,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, x-user",
            },
        )
        created = await client.post(
            "/api/conversations", headers={"origin": SHOP, "cookie": "session=ada"}
        )
        listed = await client.get(
            "/api/conversations", headers={"origin": SHOP, "cookie": "session=ada"}
        )
        other = await client.options(
            "/api/conversations",
            headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
        )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-credentials"] == "true"
    assert preflight.headers["access-control-allow-origin"] == SHOP
    assert created.status_code == 201
    assert created.headers["access-control-allow-credentials"] == "true"
    assert created.headers["access-control-allow-origin"] == SHOP
    assert [c["conversation_id"] for c in listed.json()["conversations"]] == [
        created.json()["conversation_id"]
    ], "the cookie signed the reader in"
    assert other.status_code == 400
    assert "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"cors_credentials": True}, "need an origin"),
        ({"cors_origins": ["*"], "cors_credentials": True}, "every origin"),
        ({"cors_origins": [SHOP], "cors_headers": ["x user"]}, "not an HTTP header name"),
    ],
)
def test_a_cors_setting_that_cannot_hold_is_a_config_error(
    store: Store, held: HeldQueue, keywords: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        create_app(store, held, **keywords)


@pytest.mark.parametrize("path", ["/api/conversations/", "/openapi.json/", "/widget.js/"])
async def test_a_trailing_slash_is_not_redirected_to_the_host_header(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path, headers={"host": "evil.example"})
    assert "location" not in response.headers
    assert response.status_code == 404
    assert list(response.json()) == ["error"]


async def test_every_answer_forbids_sniffing_and_the_page_limits_scripts_and_frames(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/")
    policy = _directives(page.headers["content-security-policy"])
    assert policy["script-src"] == ["'self'"], "scripts only from the page's own origin"
    assert policy["frame-ancestors"] == ["'self'"], "no other site frames the chat"
    assert page.headers["x-frame-options"] == "SAMEORIGIN"
    for path in ("/", "/widget.js", "/api/turns/t_unknown", "/openapi.json", "/nothing"):
        response = await client.get(path)
        assert response.headers["x-content-type-options"] == "nosniff", path


async def test_frame_ancestors_opens_the_page_to_the_origins_named(
    store: Store, held: HeldQueue
) -> None:
    other = "https://docs.example.com"
    app = create_app(store, held, frame_ancestors=[SHOP, other])
    async with client_for(app) as client:
        page = await client.get("/")
    policy = _directives(page.headers["content-security-policy"])
    assert policy["frame-ancestors"] == ["'self'", SHOP, other]
    assert "x-frame-options" not in page.headers, "it cannot name several origins"


async def test_metrics_are_public_only_when_asked(store: Store, held: HeldQueue) -> None:
    async with client_for(create_app(store, held)) as client:
        hidden = await client.get("/metrics")
    async with client_for(create_app(store, held, public_metrics=True)) as client:
        shown = await client.get("/metrics")
    assert hidden.status_code == 404
    assert list(hidden.json()) == ["error"]
    assert shown.status_code == 200
    assert "turnkeeper_turns_total" in shown.text


async def test_the_transcript_comes_newest_page_first_and_pages_back(
    store: Store, client: httpx.AsyncClient
) -> None:
    conversation_id, auth = await conversation(client)
    for n in range(1, 4):
        response = await client.post(
            f"/api/conversations/{conversation_id}/turns", json={"text": f"q{n}"}, headers=auth
        )
        model = GatedModel([scripts.answer(f"a{n}")])
        model.gate.set()
        await TurnJob(store, model).run(response.json()["turn_id"])
    path = f"/api/conversations/{conversation_id}"

    whole = (await client.get(path, headers=auth)).json()
    newest = (await client.get(f"{path}?limit=4", headers=auth)).json()
    older = (await client.get(f"{path}?before={newest['before']}&limit=4", headers=auth)).json()
    assert [m["text"] for m in whole["messages"]] == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert whole["before"] is None, "a short conversation is one page"
    assert [m["text"] for m in newest["messages"]] == ["q2", "a2", "q3", "a3"]
    assert newest["before"] == 2, "the messages before the second are left for another page"
    assert [m["text"] for m in older["messages"]] == ["q1", "a1"]
    assert older["before"] is None
    assert older["usage"] == whole["usage"], "usage is the conversation's, whatever the page"


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=x", "limit=100000", "before=-1", "before=1.5", "limit="]
)
async def test_a_bad_page_gets_400(client: httpx.AsyncClient, query: str) -> None:
    conversation_id, auth = await conversation(client)
    response = await client.get(f"/api/conversations/{conversation_id}?{query}", headers=auth)
    assert response.status_code == 400
    assert list(response.json()) == ["error"]


def _directives(policy: str) -> dict[str, list[str]]:
    parts = (part.split() for part in policy.split(";") if part.strip())
    return {words[0]: words[1:] for words in parts}
