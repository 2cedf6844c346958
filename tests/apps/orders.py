"""A test assistant: two Python tools that read the `ToolContext`, captions in three
languages, model settings, and readers signed in by an `x-user` header.

    turnkeeper serve orders:assistant --app-dir tests/apps
"""

from __future__ import annotations

import dataclasses
import json

from starlette.requests import Request

from turnkeeper import Assistant, Budget, ToolContext, tool

ORDERS = {"ada": ["o-1 teapot", "o-2 kettle"], "bob": ["o-3 toaster"]}
INSTRUCTIONS = "You answer questions about the signed-in customer's orders, briefly."


def my_orders(ctx: ToolContext) -> str:
    """The orders of the customer who asked, and the context the tool was given."""
    return json.dumps(
        {
            "user": ctx.user,
            "locale": ctx.locale,
            "conversation_id": ctx.conversation_id,
            "turn_id": ctx.turn_id,
            "orders": ORDERS.get(ctx.user or "", []),
        }
    )


@tool(timeout=5)
async def order_status(ctx: ToolContext, order_id: str) -> str:
    """Where one of the customer's orders is.

    Args:
        order_id: the order's id, like o-1
    """
    mine = any(o.startswith(f"{order_id} ") for o in ORDERS.get(ctx.user or "", []))
    return f"{order_id}: shipped" if mine else f"{order_id} is not one of {ctx.user}'s orders"


def signed_in(request: Request) -> str | None:
    return request.headers.get("x-user") or None


assistant = Assistant(
    name="Order desk",
    instructions=INSTRUCTIONS,
    tools=[my_orders, order_status],
    captions={
        "my_orders": {
            "en": "Looked up your orders",
            "es": "Consultó tus pedidos",
            "fr": "A consulté vos commandes",
        },
        "order_status": {"en": "Checked an order", "fr": "A vérifié une commande"},
    },
    messages={"fr": {"ui.send": "Envoyer"}, "pt-BR": {"ui.send": "Enviar"}},
    max_tokens=2048,
    temperature=0.2,
    budget=Budget(max_iterations=4),
    authenticate=signed_in,
)

open_desk = dataclasses.replace(assistant, authenticate=None)
"""The same assistant with a token per conversation, no sign-in."""

thinking = dataclasses.replace(assistant, max_tokens=4096, temperature=None, thinking=2048)

not_an_assistant = 42
