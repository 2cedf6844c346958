"""`Assistant.asgi()`: the widget and the API mounted under a prefix in a host application,
run by the host's lifespan, with the host's own users; a turn runs in the host's process."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from tests.apps import orders
from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, tool_use
from tests.waiting import eventually
from turnkeeper import ConfigError

HOST = "http://shop.test"


async def home(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the shop")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    with FakeModelServer([]) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        yield fake


def host_app(database: str, **options: Any) -> tuple[Starlette, Any]:
    chat = orders.assistant.asgi(database=database, **options)
    routes = [Route("/", home), Mount("/assistant", app=chat)]
    return Starlette(routes=routes, lifespan=chat.lifespan), chat


@pytest.fixture
async def shop(tmp_path: Path, model: FakeModelServer) -> AsyncIterator[httpx.AsyncClient]:
    app, chat = host_app(f"sqlite:///{tmp_path / 'chat.db'}")
    async with chat.lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
            yield client


async def test_the_page_and_its_files_are_served_under_the_prefix(
    shop: httpx.AsyncClient,
) -> None:
    assert (await shop.get("/")).text == "the shop", "the host's own routes are untouched"
    page = await shop.get("/assistant/")
    assert page.status_code == 200
    assert '<base href="/assistant/">' in page.text
    assert "<title>Order desk</title>" in page.text
    assert '<script src="widget.js"' in page.text
    for path in ("widget.js", "widget.css", "locales/fr.json", "openapi.json"):
        assert (await shop.get(f"/assistant/{path}")).status_code == 200, path
    about = (await shop.get("/assistant/assistant.json")).json()
    assert about == {"name": "Order desk", "locales": ["en", "es", "fr", "pt-BR"], "users": True}


async def test_a_signed_in_users_turn_runs_in_the_hosts_process(
    shop: httpx.AsyncClient, model: FakeModelServer
) -> None:
    model.script = [asks(tool_use("my_orders", {})), answer("You have a teapot and a kettle.")]
    assert (await shop.post("/assistant/api/conversations")).status_code == 401
    ada = {"x-user": "ada"}
    created = (await shop.post("/assistant/api/conversations", headers=ada)).json()
    path = f"/assistant/api/conversations/{created['conversation_id']}/turns"
    turn_id = (
        await shop.post(path, json={"text": "my orders?", "locale": "fr"}, headers=ada)
    ).json()["turn_id"]

    async def state() -> Any:
        return (await shop.get(f"/assistant/api/turns/{turn_id}", headers=ada)).json()

    async def done() -> bool:
        return bool((await state())["done"])

    await eventually(done, "the turn to finish", bound=20)
    final = await state()
    assert final["status"] == "finished"
    assert final["messages"][-1]["text"] == "You have a teapot and a kettle."
    first, second = model.requests
    assert first["system"][0]["text"] == orders.INSTRUCTIONS
    assert (first["temperature"], first["max_tokens"]) == (0.2, 2048)
    assert [t["name"] for t in first["tools"]] == ["my_orders", "order_status"]
    result = json.loads(second["messages"][-1]["content"][0]["content"])
    assert (result["user"], result["locale"], result["turn_id"]) == ("ada", "fr", turn_id)
    bob = await shop.get(f"/assistant/api/turns/{turn_id}", headers={"x-user": "bob"})
    assert bob.status_code == 404


async def test_before_the_lifespan_starts_it_answers_503_saying_why(tmp_path: Path) -> None:
    app, _ = host_app(f"sqlite:///{tmp_path / 'chat.db'}")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
        response = await client.get("/assistant/assistant.json")
    assert response.status_code == 503
    assert "lifespan" in response.json()["error"]
    # As every answer: the security headers, and a 503's retry-after.
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'self'" in response.headers["content-security-policy"]
    assert response.headers["retry-after"] == "1"


async def test_its_own_authenticate_overrides_the_assistants(
    tmp_path: Path, model: FakeModelServer
) -> None:
    app, chat = host_app(f"sqlite:///{tmp_path / 'chat.db'}", authenticate=lambda r: "everyone")
    async with chat.lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
            assert (await client.post("/assistant/api/conversations")).status_code == 201
            listed = (await client.get("/assistant/api/conversations")).json()
            assert len(listed["conversations"]) == 1


async def test_without_users_it_opens_conversations_by_token(
    tmp_path: Path, model: FakeModelServer
) -> None:
    chat = dataclasses.replace(orders.assistant, authenticate=None).asgi(
        database=f"sqlite:///{tmp_path / 'chat.db'}"
    )
    app = Starlette(routes=[Mount("/chat", app=chat)], lifespan=chat.lifespan)
    async with chat.lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
            created = await client.post("/chat/api/conversations")
            assert created.status_code == 201
            cid = created.json()["conversation_id"]
            assert (await client.get(f"/chat/api/conversations/{cid}")).status_code == 404
            auth = {"authorization": f"Bearer {created.json()['token']}"}
            assert (await client.get(f"/chat/api/conversations/{cid}", headers=auth)).is_success


def test_worker_false_needs_postgresql() -> None:
    with pytest.raises(ConfigError, match="needs a PostgreSQL database"):
        orders.assistant.asgi(database="sqlite:///x.db", worker=False)


async def test_mounted_it_keeps_metrics_private_and_frames_only_where_told(
    tmp_path: Path, model: FakeModelServer
) -> None:
    database = f"sqlite:///{tmp_path / 'chat.db'}"
    results = []
    for options in ({}, {"public_metrics": True, "frame_ancestors": ["https://docs.example"]}):
        app, chat = host_app(database, **options)
        async with chat.lifespan(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
                metrics = await client.get("/assistant/metrics")
                page = await client.get("/assistant/")
        results.append((metrics.status_code, page.headers["content-security-policy"]))
    (hidden, private), (shown, framed) = results
    assert (hidden, shown) == (404, 200)
    assert private.endswith("frame-ancestors 'self'")
    assert framed.endswith("frame-ancestors 'self' https://docs.example")


TINY_HOST = """
from starlette.applications import Starlette
from starlette.routing import Mount
from turnkeeper import Assistant

chat = Assistant(name="Tiny helper").asgi(database="sqlite:///tiny.db")
app = Starlette(routes=[Mount("/assistant", app=chat)], lifespan=chat.lifespan)
"""


def test_under_plain_uvicorn_a_mounted_assistant_says_one_banner_line(tmp_path: Path) -> None:
    """uvicorn's own log config shows no `turnkeeper.*` INFO record: the banner is one line
    on stderr, said once the host's lifespan has started it."""
    (tmp_path / "host.py").write_text(TINY_HOST, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    environ.pop("TURNKEEPER_PROVIDER", None)
    argv = [sys.executable, "-m", "uvicorn", "host:app", "--port", "0"]
    with subprocess.Popen(
        argv, cwd=tmp_path, env=environ, stderr=subprocess.PIPE, text=True
    ) as uvicorn:
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: any(map(lines.put, uvicorn.stderr or ())))
        reader.start()
        said: list[str] = []
        deadline = time.monotonic() + 60
        while not any("Application startup complete" in line for line in said):
            assert time.monotonic() < deadline, said
            with contextlib.suppress(queue.Empty):
                said.append(lines.get(timeout=0.5))
        uvicorn.terminate()
        reader.join(timeout=30)  # to the pipe's end, before `with` closes it
    banners = [line for line in said if "turnkeeper" in line]
    assert len(banners) == 1, said
    [line] = banners
    assert line.startswith("turnkeeper ")
    assert " mounted: " in line
    assert "mounted ('Tiny helper')" in line
    assert "database sqlite:///tiny.db" in line
    assert said.index(line) < len(said) - 1, "before uvicorn says the startup is complete"
