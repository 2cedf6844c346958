"""`turnkeeper serve shop:assistant --app-dir examples/shop --provider dev`, with no key in
its environment, over real HTTP: the dev model calls each of the shop's tools in turn, the
reader's stream carries each caption, the card, the approval the cancellation waits for,
then the answer in many text deltas."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sse import Sse, read_stream
from tests.test_example_shop import CHECKOUT, COOKIE, NOT_OURS, SECRET, cookie
from tests.test_server import free_port, output, running, until_answers

SHOP = ("shop:assistant", "--app-dir", "examples/shop")
PACE = "150"
"""Words a second: quick for a test, slow enough that the answer takes most of a second."""
TOOLS = ["my_orders", "order_status", "order_card", "cancel_order"]


@dataclass
class DevShop:
    """`serve` of the shop's assistant on the dev model, and its log."""

    base: str
    log: Path

    def reader(self, name: str) -> dict[str, str]:
        """The headers of a reader the shop signed in (its session cookie)."""
        return {"cookie": f"{COOKIE}={cookie(name, SECRET)}"}


@contextmanager
def serving_dev(tmp: Path, pace: str = PACE) -> Iterator[DevShop]:
    """`turnkeeper serve shop:assistant --provider dev`, no key anywhere in its environment."""
    port = free_port()
    base, log = f"http://127.0.0.1:{port}", tmp / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_OURS)}
    env["SHOP_SECRET"] = SECRET
    database = f"sqlite:///{tmp / 'dev.db'}"
    command = [sys.executable, "-m", "turnkeeper", "serve", *SHOP, "--provider", "dev"]
    command += ["--dev-pace", pace, "--database", database, "--port", str(port)]
    with running(command, log=log, env=env, cwd=CHECKOUT) as process:
        until_answers(f"{base}/assistant.json", process, log)
        yield DevShop(base, log)


@pytest.fixture(scope="module")
def dev_shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevShop]:
    with serving_dev(tmp_path_factory.mktemp("dev")) as shop:
        yield shop


def of(sse: Sse, kind: str) -> list[dict[str, Any]]:
    """The bodies of the stream's events of one type, in order."""
    return [e["data"] for e in sse.events if e["event"] == kind]


async def start_turn(shop: DevShop, reader: dict[str, str], text: str) -> str:
    async with httpx.AsyncClient(base_url=shop.base, headers=reader) as client:
        created = await client.post("/api/conversations")
        assert created.status_code == 201, created.text
        conversation_id = created.json()["conversation_id"]
        sent = await client.post(
            f"/api/conversations/{conversation_id}/turns", json={"text": text, "locale": "en"}
        )
        assert sent.status_code == 202, sent.text
        return str(sent.json()["turn_id"])


async def test_a_served_turn_calls_every_tool_waits_for_approval_and_streams_its_answer(
    dev_shop: DevShop,
) -> None:
    ada = dev_shop.reader("ada")
    turn_id = await start_turn(dev_shop, ada, "what can you do?")
    waiting = await read_stream(dev_shop.base, turn_id, ada)
    assert waiting.ended, output(dev_shop.log)
    assert waiting.types[-1] == "turn.waiting"
    started = of(waiting, "tool.started")
    assert [(s["tool"], s["input"]) for s in started] == [
        ("my_orders", {}),
        ("order_status", {"order_id": "A-1001"}),
        ("order_card", {"order_id": "A-1001"}),
    ], "each tool in turn, with its schema's example; cancel_order waits"
    outputs = [e["output"] for e in of(waiting, "tool.ended")]
    assert outputs[1] == "A-1001: teapot, shipped"
    assert [a["key"] for a in of(waiting, "activity")][:3] == [
        "activity.my_orders",
        "activity.order_status",
        "activity.order_card",
    ]
    [card] = of(waiting, "card")
    assert card["card"]["title"] == "Order A-1001"
    assert card["card"]["links"] == [
        {"text": "Track it", "url": "https://carrier.example/track/A-1001"}
    ]
    [asked] = of(waiting, "approval.requested")
    [approval] = asked["approvals"]
    assert (approval["tool"], approval["input"]) == ("cancel_order", {"order_id": "A-1002"})
    assert of(waiting, "text.delta") == [], "no answer before every tool ran"

    async with httpx.AsyncClient(base_url=dev_shop.base, headers=ada) as client:
        state = (await client.get(f"/api/turns/{turn_id}")).json()
        assert state["status"] == "waiting"
        decided = await client.post(
            f"/api/turns/{turn_id}/approvals",
            json={"tool_use_id": approval["tool_use_id"], "approved": True},
        )
        assert decided.status_code == 202, decided.text
    after = str(waiting.ids[-1])
    ended = await read_stream(dev_shop.base, turn_id, ada, params={"after": after})
    assert ended.types[-1] == "turn.ended", output(dev_shop.log)
    [cancelled] = of(ended, "tool.ended")
    assert cancelled["output"] == "A-1002 is cancelled."
    captions = [a["key"] for a in of(waiting, "activity") + of(ended, "activity")]
    assert captions.count("activity.cancel_order") == 1, "its caption, published once"
    deltas = of(ended, "text.delta")
    assert len(deltas) >= 4, "streamed word by word at a reader's pace, not in one piece"
    [done] = of(ended, "turn.ended")
    assert (done["status"], done["outcome"]) == ("finished", "finished")
    assert done["usage"]["input_tokens"] > 0
    assert not done["usage"].get("cost_usd")

    async with httpx.AsyncClient(base_url=dev_shop.base, headers=ada) as client:
        final = (await client.get(f"/api/turns/{turn_id}")).json()
    answer = final["messages"][-1]["text"]
    assert "".join(d["delta"] for d in deltas) == answer
    for tool in TOOLS:
        assert f"**{tool.replace('_', chr(92) + '_')}**" in answer
    assert "`A-1002 is cancelled.`" in answer
    assert "dev (offline; calls each tool with sample input, 150 words/s)" in output(dev_shop.log)


async def test_a_denied_tool_and_a_tool_that_refuses_are_reported_and_the_turn_finishes(
    dev_shop: DevShop,
) -> None:
    """bob has no order A-1001: the card's tool refuses it (an error result, as any tool
    error); he denies the cancellation; the turn goes on to its answer."""
    bob = dev_shop.reader("bob")
    turn_id = await start_turn(dev_shop, bob, "hello")
    waiting = await read_stream(dev_shop.base, turn_id, bob)
    ended_tools = of(waiting, "tool.ended")
    assert [e["is_error"] for e in ended_tools] == [False, False, True]
    assert ended_tools[2]["output"] == "A-1001 is not one of your orders."
    assert of(waiting, "card") == []
    [asked] = of(waiting, "approval.requested")
    use_id = asked["approvals"][0]["tool_use_id"]
    async with httpx.AsyncClient(base_url=dev_shop.base, headers=bob) as client:
        decided = await client.post(
            f"/api/turns/{turn_id}/approvals", json={"tool_use_id": use_id, "approved": False}
        )
        assert decided.status_code == 202
    ended = await read_stream(dev_shop.base, turn_id, bob, params={"after": str(waiting.ids[-1])})
    assert of(ended, "tool.started") == [], "a denied tool does not run"
    [done] = of(ended, "turn.ended")
    assert done["status"] == "finished"
    async with httpx.AsyncClient(base_url=dev_shop.base, headers=bob) as client:
        answer = (await client.get(f"/api/turns/{turn_id}")).json()["messages"][-1]["text"]
    assert "→ error: `A-1001 is not one of your orders.`" in answer
    assert "→ error: `The person declined this tool call; cancel_order was not run.`" in answer


async def test_the_served_demo_streams_its_answer_in_many_deltas(tmp_path: Path) -> None:
    """`serve` with no APP and no key: the demo's answer streams at a reader's pace (it came
    in one or two deltas, all its words at once)."""
    port = free_port()
    base, log = f"http://127.0.0.1:{port}", tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_OURS)}
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    command = [sys.executable, "-m", "turnkeeper", "serve", "--database", database]
    with running([*command, "--port", str(port)], log=log, env=env) as process:
        until_answers(f"{base}/assistant.json", process, log)
        async with httpx.AsyncClient(base_url=base) as client:
            created = (await client.post("/api/conversations")).json()
            auth = {"authorization": f"Bearer {created['token']}"}
            sent = await client.post(
                f"/api/conversations/{created['conversation_id']}/turns",
                json={"text": "hello, who are you?"},
                headers=auth,
            )
        streamed = await read_stream(base, sent.json()["turn_id"], auth)
    deltas = [d["delta"] for d in of(streamed, "text.delta")]
    assert "".join(deltas).startswith("I am turnkeeper's offline demo model")
    assert len(deltas) >= 4, deltas
