"""A shop's assistant for the browser tests: its own name, a Python tool with a caption
in three languages, and catalog entries in French and Brazilian Portuguese.

`my_orders` answers with the locale its `ToolContext` carries, so a test reads, in the
model's next request, the locale the widget sent with the turn.
"""

from __future__ import annotations

from turnkeeper import Assistant, ToolContext, tool


@tool
def my_orders(ctx: ToolContext) -> str:
    """The reader's open orders."""
    return ctx.locale


assistant = Assistant(
    name="Shop helper",
    instructions="You help customers of Example Shop with their orders.",
    tools=[my_orders],
    captions={
        "my_orders": {
            "en": "Looked up your orders",
            "es": "Consultó tus pedidos",
            "fr": "A consulté vos commandes",
        }
    },
    messages={
        "fr": {
            "ui.send": "Envoyer",
            "ui.stop": "Arrêter",
            "ui.you": "vous",
            "ui.placeholder": "Posez une question…",
            "ui.working": "En cours…",
        },
        "pt-BR": {
            "ui.send": "Enviar",
            "ui.you": "você",
            "ui.placeholder": "Pergunte algo…",
        },
    },
)
