"""Cards: what a tool returns for the reader to see as it is. The card's checks and its
JSON, the bubble that carries it after the tool that made it, and `run` printing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import answer, asks, tool_use
from tests.tools.turns import scripted_turn, tool_results
from turnkeeper import Card, CardError, tool
from turnkeeper.api.openapi import Bubble as DeclaredBubble
from turnkeeper.cli import main
from turnkeeper.cli.run import transcript
from turnkeeper.state import Bubble, PublishedState
from turnkeeper.tools.functions import FunctionToolset

ORDER = Card(
    "Order A-1001",
    {"Status": "shipped", "Total": 42.5, "Note": None},
    columns=["Item", "Qty"],
    rows=[["Teapot", 1], ["Kettle", 2]],
    links=[("Track it", "https://carrier.example/t/1")],
)
ORDER_JSON = {
    "title": "Order A-1001",
    "fields": [
        {"label": "Status", "value": "shipped"},
        {"label": "Total", "value": "42.5"},
        {"label": "Note", "value": ""},
    ],
    "columns": ["Item", "Qty"],
    "rows": [["Teapot", "1"], ["Kettle", "2"]],
    "links": [{"text": "Track it", "url": "https://carrier.example/t/1"}],
}


# ---- the card ---------------------------------------------------------------------


def test_a_cards_json_keeps_the_order_given_and_every_value_as_text() -> None:
    assert ORDER.to_json() == ORDER_JSON
    assert list(ORDER.to_json()) == ["title", "fields", "columns", "rows", "links"]
    assert Card.from_json(ORDER_JSON) == ORDER
    assert Card("Just a title").to_json() == {
        "title": "Just a title",
        "fields": [],
        "columns": [],
        "rows": [],
        "links": [],
    }


def test_fields_may_be_pairs_and_a_table_needs_no_headings() -> None:
    card = Card("Totals", [("b", 2), ("a", 1)], rows=[["x", "y"], ["z", "w"]])
    assert card.fields == (("b", "2"), ("a", "1"))
    assert card.columns == ()
    assert card.rows == (("x", "y"), ("z", "w"))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"title": ""}, "card title: is empty"),
        ({"title": None}, "card title: must be text, not NoneType"),
        ({"fields": {"a": [1, 2]}}, "card field 'a': must be text or a number, not list"),
        ({"fields": {"a": True}}, "card field 'a': must be text or a number, not bool"),
        ({"fields": "ab"}, "card fields: must be a list, not str"),
        ({"fields": [("a",)]}, "card fields[0]: must be a pair (label, value)"),
        ({"columns": ["a", "b"], "rows": [[1]]}, "card rows[0]: 1 cells, the table has 2"),
        ({"rows": [[1, 2], [3]]}, "card rows[1]: 1 cells, the table has 2 columns"),
        ({"columns": ["a", " "]}, "card columns[1]: is empty"),
        ({"columns": "ab"}, "card columns: must be a list, not str"),
        ({"links": [("x", "")]}, "card links[0] url: is empty"),
        ({"links": ["https://a.example"]}, "card links[0]: must be a pair (text, url)"),
        ({"rows": [[1]] * 201}, "card rows: 201 of them, at most 200"),
        ({"title": "x" * 4001}, "card title: longer than 4000 characters"),
    ],
)
def test_a_card_that_cannot_be_drawn_says_which_part_and_why(
    args: dict[str, Any], says: str
) -> None:
    with pytest.raises(CardError) as raised:
        Card(**{"title": "t", **args})
    assert str(raised.value).startswith(says), str(raised.value)


def test_a_card_is_frozen_and_hashable() -> None:
    with pytest.raises(AttributeError):
        ORDER.title = "other"  # type: ignore[misc]
    assert hash(ORDER) == hash(Card.from_json(ORDER_JSON))


def test_a_card_as_plain_text() -> None:
    assert ORDER.as_text().splitlines() == [
        "Order A-1001",
        "Status: shipped",
        "Total: 42.5",
        "Note: ",
        "Item\tQty",
        "Teapot\t1",
        "Kettle\t2",
        "Track it <https://carrier.example/t/1>",
    ]


# ---- the published bubble -----------------------------------------------------------


def test_a_card_bubbles_json_is_its_own_and_reads_back() -> None:
    bubble = Bubble("m3", "bot", card=ORDER)
    assert bubble.to_json() == {"id": "m3", "role": "bot", "card": ORDER_JSON}
    assert Bubble.from_json(bubble.to_json()) == bubble
    assert DeclaredBubble.model_validate(bubble.to_json()).card is not None


@tool
def look_up(order_id: str) -> Card:
    """An order, as a card.

    Args:
        order_id: the order's id
    """
    return Card(f"Order {order_id}", {"Status": "shipped"})


@tool
def broken() -> Card:
    """A tool whose card cannot be drawn."""
    return Card("Broken", {"Status": object()})


async def test_the_model_reads_the_cards_json_and_the_state_shows_it_after_the_text() -> None:
    script = [
        asks(tool_use("look_up", {"order_id": "A-1"}), say="Let me look."),
        answer("It has shipped."),
    ]
    result, _ = await scripted_turn(FunctionToolset([look_up]), *script)
    [block] = tool_results(result)
    assert json.loads(block["content"]) == Card("Order A-1", {"Status": "shipped"}).to_json()
    assert not block.get("is_error")
    messages = result.state.to_json()["messages"]
    assert [(m["id"], sorted(m)) for m in messages] == [
        ("m1", ["id", "role", "text"]),
        ("m2", ["id", "role", "text"]),
        ("m3", ["card", "id", "role"]),
        ("m4", ["id", "role", "text"]),
    ]
    assert messages[2]["card"]["title"] == "Order A-1"
    assert PublishedState.from_json(result.state.to_json()) == result.state


async def test_cards_of_one_response_follow_its_tools_order() -> None:
    uses = [tool_use("look_up", {"order_id": n}) for n in ("A-1", "B-2")]
    result, _ = await scripted_turn(FunctionToolset([look_up]), asks(*uses), answer("Both."))
    cards = [m["card"]["title"] for m in result.state.to_json()["messages"] if "card" in m]
    assert cards == ["Order A-1", "Order B-2"]


async def test_a_card_that_cannot_be_drawn_is_an_error_result_and_the_turn_goes_on() -> None:
    result, hooks = await scripted_turn(
        FunctionToolset([broken]), asks(tool_use("broken")), answer("Sorry.")
    )
    [block] = tool_results(result)
    assert block["is_error"] is True
    assert "CardError" in str(block["content"])
    assert "card field 'Status': must be text or a number, not object" in str(block["content"])
    assert [r.event for r in hooks.reports] == ["tool_error"]
    assert result.state.status == "finished"
    assert not [m for m in result.state.to_json()["messages"] if "card" in m]


# ---- the CLI ------------------------------------------------------------------------


def test_the_transcript_prints_a_card_as_plain_text() -> None:
    messages: list[dict[str, Any]] = [
        {"id": "m1", "role": "user", "text": "my order?"},
        {"id": "m2", "role": "bot", "card": ORDER_JSON},
    ]
    assert transcript(messages, "en").splitlines() == [
        "You: my order?",
        "Assistant: Order A-1001",
        "Status: shipped",
        "Total: 42.5",
        "Note: ",
        "Item\tQty",
        "Teapot\t1",
        "Kettle\t2",
        "Track it <https://carrier.example/t/1>",
    ]


def test_run_prints_the_card_a_tool_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` with a script whose model asks for a tool that returns a card (the tool stands
    in for `read_file`, the one tool `run` offers)."""
    monkeypatch.setattr("turnkeeper.cli.run.read_file_tool", lambda root: look_up)
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    script = tmp_path / "script.json"
    steps = [asks(tool_use("look_up", {"order_id": "A-7"})), answer("Shipped.")]
    script.write_text(json.dumps(steps), encoding="utf-8")
    assert main(["run", "--script", str(script), "where is A-7?"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "You: where is A-7?",
        "Assistant: Order A-7",
        "Status: shipped",
        "Assistant: Shipped.",
    ]
