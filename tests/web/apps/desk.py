"""A help desk's assistant for the browser tests: a Python tool that answers with a card,
and readers who sign in (a `reader` cookie names them: a test's stand-in for real sessions,
which anyone could forge).

The card's links are one `https:` address, which the widget shows, and a `javascript:`
and an `http:` one, which it must drop.
"""

from __future__ import annotations

from starlette.requests import Request

from turnkeeper import Assistant, Card, tool

TRACKING = "https://carrier.example/track/A-1001"
HOSTILE_LINK = "javascript:window.__pwned=1"
PLAIN_HTTP = "http://carrier.example/insecure"


@tool
def order_card(order_id: str) -> Card:
    """One of the reader's orders, as a card.

    Args:
        order_id: the order's id, like A-1001
    """
    return Card(
        f"Order {order_id}",
        {"Status": "shipped", "Total": "€42.00", "Parcels": 2},
        columns=["Item", "Qty", "Price"],
        rows=[["Teapot", 1, "€30.00"], ["Kettle", 1, "€12.00"]],
        links=[
            ("Track the parcel", TRACKING),
            ("Run this", HOSTILE_LINK),
            ("Insecure page", PLAIN_HTTP),
        ],
    )


def signed_in(request: Request) -> str | None:
    """The reader the `reader` cookie names, or None (not signed in)."""
    return request.cookies.get("reader") or None


assistant = Assistant(
    name="Help desk",
    instructions="You help customers with their orders.",
    tools=[order_card],
    captions={"order_card": {"en": "Looked up the order", "es": "Consultó el pedido"}},
    authenticate=signed_in,
)
