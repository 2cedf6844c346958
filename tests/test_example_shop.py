"""examples/shop/shop.py, started as its docstring says, over real HTTP: the shop's signed
cookie decides who the assistant's reader is, its tools answer for that reader only (in
the shop's process, or in a `turnkeeper worker` reading the same PostgreSQL), and no
reader opens another's conversation. The model is a fake Messages API."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, tool_use
from tests.test_server import free_port, output, running, until_answers
from tests.waiting import eventually
from turnkeeper.cli.loading import load

CHECKOUT = Path(__file__).resolve().parents[1]
EXAMPLE = CHECKOUT / "examples" / "shop" / "shop.py"
SECRET = "the-tests-shop-secret"
COOKIE = "shop_session"
ADAS_ORDERS = {"A-1001": "teapot, shipped", "A-1002": "kettle, being packed"}
ORDERS_QUESTION = "où en sont mes commandes ?"
LOOK_UP = [asks(tool_use("my_orders")), answer("Une théière expédiée, une bouilloire emballée.")]
"""The model asks for `my_orders`, then answers."""
NOT_OURS = ("ANTHROPIC_", "OPENAI_", "TURNKEEPER_", "SHOP_")
"""Variables of the test runner's environment the example is not given."""


@dataclass
class Shop:
    """A running example and the fake model behind it."""

    base: str
    model: FakeModelServer
    log: Path
    env: dict[str, str]

    def answering(self, script: Sequence[Any]) -> FakeModelServer:
        """The fake model answers the next calls with `script`, as if freshly started."""
        with self.model._lock:
            self.model.script = list(script)
            self.model.requests.clear()
            self.model.released = threading.Event()
        return self.model


def example_env(model: FakeModelServer, database: str, *, external: bool = False) -> dict[str, str]:
    """The environment the example runs in: its model the fake one, its conversations in
    `database`; `external`: turns left to `turnkeeper worker` processes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_OURS)}
    env |= {
        "ANTHROPIC_API_KEY": "sk-test-not-real",
        "ANTHROPIC_BASE_URL": model.url,
        "SHOP_DATABASE": database,
        "SHOP_SECRET": SECRET,
    }
    if external:
        env["SHOP_WORKERS"] = "external"
    return env


@contextmanager
def started(
    command: Sequence[str], env: dict[str, str], log: Path, serving: str | None = None
) -> Iterator[None]:
    """`command` run from the checkout, its output in `log`, until it answers at `serving`
    if it serves; stopped (SIGTERM) at exit."""
    with running(command, log=log, env=env, cwd=CHECKOUT) as process:
        if serving is not None:
            until_answers(f"{serving}/assistant/assistant.json", process, log)
        yield


@contextmanager
def running_shop(
    tmp: Path, model: FakeModelServer, database: str | None = None, *, external: bool = False
) -> Iterator[Shop]:
    """`python examples/shop/shop.py --port N`, as its docstring says, against `model`;
    its conversations in `database` (default: a SQLite file in `tmp`)."""
    port = free_port()
    log = tmp / "shop.log"
    env = example_env(model, database or f"sqlite:///{tmp / 'shop.db'}", external=external)
    command = [sys.executable, "examples/shop/shop.py", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    with started(command, env, log, serving=base):
        try:
            yield Shop(base, model, log, env)
        finally:
            model.release()  # a held call is let go before the shop is stopped


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    """One example process for the module (starting one takes a second or more)."""
    with (
        FakeModelServer([]) as model,
        running_shop(tmp_path_factory.mktemp("shop"), model) as running,
    ):
        yield running


async def sign_in(client: httpx.AsyncClient, name: str) -> None:
    """Through the shop's form, as a browser posts it; the client keeps the cookie."""
    response = await client.post("/sign-in", data={"name": name})
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/assistant/"
    assert client.cookies.get(COOKIE)


async def ask(
    client: httpx.AsyncClient, text: str, locale: str = "fr", bound: float = 30
) -> dict[str, Any]:
    """A new conversation, one question in it; the turn's final state and its
    conversation's id (`conversation_id`)."""
    created = await client.post("/assistant/api/conversations")
    assert created.status_code == 201, created.text
    conversation_id = created.json()["conversation_id"]
    sent = await client.post(
        f"/assistant/api/conversations/{conversation_id}/turns",
        json={"text": text, "locale": locale},
    )
    assert sent.status_code == 202, sent.text
    turn_id = sent.json()["turn_id"]
    final: dict[str, Any] = {}

    async def done() -> bool:
        polled = await client.get(f"/assistant/api/turns/{turn_id}")
        assert polled.status_code == 200, polled.text
        final.update(polled.json())
        return bool(final["done"])

    await eventually(done, "the turn to finish", bound=bound)
    return {**final, "conversation_id": conversation_id}


def tool_results(request: dict[str, Any]) -> list[str]:
    """The tool results' contents a model request carries in its last message."""
    content = request["messages"][-1]["content"]
    return [block["content"] for block in content if block.get("type") == "tool_result"]


def cookie(name: str, secret: str) -> str:
    """A session cookie for `name` signed with `secret`, made as the shop makes one."""
    payload = base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
    signature = hmac.new(secret.encode(), payload.encode(), hashlib.sha256).hexdigest()
    return f"{payload}.{signature}"


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    """The example's module, imported in this process by its import string."""
    saved = list(sys.path)
    try:
        load("shop:assistant", EXAMPLE.parent)
        yield sys.modules["shop"]
    finally:
        sys.path[:] = saved
        sys.modules.pop("shop", None)


def test_importing_it_builds_the_assistant_and_opens_nothing(
    example: ModuleType, tmp_path: Path
) -> None:
    """What `turnkeeper worker shop:assistant --app-dir examples/shop` imports, started in
    an empty folder: the assistant, and no database file made on the way."""
    code = "import shop; print(shop.assistant.name, shop.assistant.tool_names)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(EXAMPLE.parent), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout == "Shop helper ['my_orders', 'order_status', 'order_card', 'cancel_order']\n"
    )
    assert list(tmp_path.iterdir()) == [], "importing the example opened nothing"
    assert example.assistant.authenticate is example.signed_in


async def test_the_home_page_says_who_is_signed_in_and_signing_out_ends_it(shop: Shop) -> None:
    async with httpx.AsyncClient(base_url=shop.base) as client:
        home = (await client.get("/")).text
        assert "not signed in" in home
        assert 'href="/sign-in"' in home
        assert 'href="/assistant/"' in home
        form = (await client.get("/sign-in")).text
        assert '<form method="post" action="/sign-in">' in form
        assert 'name="name"' in form
        refused = await client.post("/sign-in", data={"name": "   "})
        assert refused.status_code == 400
        assert COOKIE not in client.cookies
        await sign_in(client, "<ada>")
        assert "Signed in as <strong>&lt;ada&gt;</strong>" in (await client.get("/")).text
        assert (await client.get("/assistant/api/conversations")).status_code == 200
        signed_out = await client.post("/sign-out")
        assert (signed_out.status_code, signed_out.headers["location"]) == (303, "/")
        assert "not signed in" in (await client.get("/")).text
        assert (await client.get("/assistant/api/conversations")).status_code == 401


async def test_the_api_answers_401_without_a_cookie_the_shop_signed(shop: Shop) -> None:
    async with httpx.AsyncClient(base_url=shop.base) as client:
        assert (await client.get("/assistant/api/conversations")).status_code == 401
        assert (await client.post("/assistant/api/conversations")).status_code == 401
        ada = cookie("ada", SECRET)
        payload, signature = ada.split(".")
        bobs_signature = cookie("bob", SECRET).split(".")[1]
        for forged in (
            cookie("ada", "another-secret"),
            f"{payload}.{bobs_signature}",
            f"{payload}.{signature[:-1]}",
            payload,
            f".{signature}",
        ):
            client.cookies.set(COOKIE, forged)
            response = await client.get("/assistant/api/conversations")
            assert response.status_code == 401, forged
        client.cookies.set(COOKIE, ada)  # the same cookie, signed with the shop's secret
        assert (await client.get("/assistant/api/conversations")).status_code == 200


async def test_adas_turn_gives_the_tool_her_orders_and_bob_cannot_open_it(
    shop: Shop, example: ModuleType
) -> None:
    model = shop.answering(LOOK_UP)
    async with (
        httpx.AsyncClient(base_url=shop.base) as ada,
        httpx.AsyncClient(base_url=shop.base) as bob,
    ):
        await sign_in(ada, "ada")
        final = await ask(ada, ORDERS_QUESTION, locale="fr")
        assert final["status"] == "finished"
        assert final["messages"][-1]["text"] == "Une théière expédiée, une bouilloire emballée."
        first, second = model.requests
        assert first["system"][0]["text"] == example.INSTRUCTIONS
        assert first["system"][0]["text"].startswith("You help customers of Example Shop")
        assert [t["name"] for t in first["tools"]] == [
            "my_orders",
            "order_status",
            "order_card",
            "cancel_order",
        ]
        assert first["tools"][1]["input_schema"]["required"] == ["order_id"]
        assert first["messages"][0]["content"] == ORDERS_QUESTION
        [result] = tool_results(second)
        assert json.loads(result) == ADAS_ORDERS
        assert "B-2001" not in result, "bob's order is not ada's"

        await sign_in(bob, "bob")
        conversation_id, turn_id = final["conversation_id"], final["turn_id"]
        assert (await bob.get(f"/assistant/api/turns/{turn_id}")).status_code == 404
        assert (await bob.get(f"/assistant/api/conversations/{conversation_id}")).status_code == 404
        into_adas = await bob.post(
            f"/assistant/api/conversations/{conversation_id}/turns", json={"text": "hi"}
        )
        assert into_adas.status_code == 404
        assert (await bob.post(f"/assistant/api/turns/{turn_id}/cancel")).status_code == 404
        bobs = (await bob.post("/assistant/api/conversations")).json()["conversation_id"]
        listed = (await bob.get("/assistant/api/conversations")).json()["conversations"]
        assert [c["conversation_id"] for c in listed] == [bobs]
        adas = (await ada.get("/assistant/api/conversations")).json()["conversations"]
        assert conversation_id in [c["conversation_id"] for c in adas]
        assert bobs not in [c["conversation_id"] for c in adas]
        transcript = (await ada.get(f"/assistant/api/conversations/{conversation_id}")).json()
        assert [m["role"] for m in transcript["messages"]] == ["user", "bot"]
    assert len(model.requests) == 2, "bob's turn in ada's conversation never reached the model"


async def test_order_status_answers_only_for_the_customers_own_orders(shop: Shop) -> None:
    both = asks(
        tool_use("order_status", {"order_id": "B-2001"}),
        tool_use("order_status", {"order_id": "A-1001"}),
    )
    model = shop.answering([both, answer("Your teapot is shipped.")])
    async with httpx.AsyncClient(base_url=shop.base) as ada:
        await sign_in(ada, "ada")
        final = await ask(ada, "where are B-2001 and A-1001?", locale="en")
    assert final["status"] == "finished"
    assert tool_results(model.requests[1]) == [
        "B-2001 is not one of your orders.",
        "A-1001: teapot, shipped",
    ]


async def test_its_french_catalog_has_the_captions_and_every_ui_key(shop: Shop) -> None:
    async with httpx.AsyncClient(base_url=shop.base) as client:
        about = (await client.get("/assistant/assistant.json")).json()
        english = (await client.get("/assistant/locales/en.json")).json()
        french = (await client.get("/assistant/locales/fr.json")).json()
        spanish = (await client.get("/assistant/locales/es.json")).json()
        page = (await client.get("/assistant/")).text
    assert about == {"name": "Shop helper", "locales": ["en", "es", "fr"], "users": True}
    assert "<title>Shop helper</title>" in page
    assert french["activity.my_orders"] == "A consulté vos commandes"
    assert french["activity.order_status"] == "A vérifié une commande"
    assert spanish["activity.my_orders"] == "Consultó tus pedidos"
    assert english["activity.order_status"] == "Checked an order"
    ui = sorted(key for key in english if key.startswith("ui."))
    assert ui, "the shipped catalog has ui.* keys"
    untranslated = [key for key in ui if french.get(key, english[key]) == english[key]]
    assert untranslated == [], "every ui.* key of the widget has its French in the example"


@pytest.mark.postgres
async def test_a_worker_process_runs_adas_turn_with_her_user(
    postgres_database: str, tmp_path: Path
) -> None:
    """SHOP_WORKERS=external on PostgreSQL: the shop only queues the turn; `turnkeeper
    worker shop:assistant --app-dir examples/shop`, another process, runs it, and the tool
    there is told the user the shop's cookie named."""
    from tests.databases import fresh_schema

    worker_log = tmp_path / "worker.log"
    worker = [sys.executable, "-m", "turnkeeper", "worker", "shop:assistant"]
    with fresh_schema(postgres_database) as url, FakeModelServer(LOOK_UP) as model:
        env = example_env(model, url, external=True)
        with (
            # Started first: importing the SDKs takes it a while on a busy machine.
            started([*worker, "--app-dir", "examples/shop", "--database", url], env, worker_log),
            running_shop(tmp_path, model, url, external=True) as shop,
        ):
            async with httpx.AsyncClient(base_url=shop.base) as ada:
                await sign_in(ada, "ada")
                final = await ask(ada, ORDERS_QUESTION, locale="fr", bound=60)
    assert final["status"] == "finished", output(worker_log)
    assert "distributed (turns queued for `turnkeeper worker` processes)" in output(shop.log)
    assert "shop:assistant ('Shop helper')" in output(worker_log)
    assert final["turn_id"] in output(worker_log), "the worker ran the turn"
    first, second = model.requests
    assert first["system"][0]["text"].startswith("You help customers of Example Shop")
    [result] = tool_results(second)
    assert json.loads(result) == ADAS_ORDERS
