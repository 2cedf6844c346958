"""Example Shop: turnkeeper's assistant mounted in a web application with its own sign-in.

A small Starlette shop: a home page, a sign-in form and, at /assistant/, the chat of an
assistant whose tools answer for the signed-in customer only. Each tool takes the turn's
`ToolContext` first: `ctx.user` is whom `signed_in` named, in whichever process runs the turn.

Needs the server extra (which brings the Anthropic and OpenAI SDKs); without it, it says
so in one line (exit 2). From the turnkeeper checkout:

    .venv/bin/pip install -e '.[server]'
    .venv/bin/python examples/shop/shop.py   # on http://127.0.0.1:8000; --port or PORT for another

and sign in as ada or bob. The model is Anthropic's with ANTHROPIC_API_KEY set, else an
OpenAI-compatible one's at OPENAI_BASE_URL, else an offline demo that says how to set one
up. Conversations are kept in SHOP_DATABASE (default sqlite:///shop.db in the current folder).
Without a key, TURNKEEPER_PROVIDER=dev runs the offline dev model: asked anything, it calls
each tool in turn (you approve `cancel_order` in the chat), then says what they returned.

To scale out (with the postgres extra too), keep them in a PostgreSQL database and let
`turnkeeper worker` processes, as many as needed, run the turns with this same `assistant`:

    export SHOP_DATABASE=postgresql://postgres@127.0.0.1:5432/shop SHOP_WORKERS=external
    .venv/bin/python examples/shop/shop.py
    .venv/bin/turnkeeper worker shop:assistant --app-dir examples/shop --database "$SHOP_DATABASE"
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import html
import logging
import os
import secrets
import sys
from typing import Annotated
from urllib.parse import parse_qs

try:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Mount, Route
except ImportError as e:  # the server extra is missing: one line, not a traceback
    print(
        f"shop.py needs {e.name}: .venv/bin/pip install -e '.[server]' in turnkeeper's checkout",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

from pydantic import Field

from turnkeeper import Assistant, Card, ToolContext, ToolRefused, tool

# Sign-in, a stand-in for your application's real sessions: the signed-in name in a cookie,
# signed with HMAC-SHA256 so that no one can forge it. The secret is SHOP_SECRET, else a
# random one per process (a restart signs everyone out).

SECRET = os.environ.get("SHOP_SECRET", "").encode() or secrets.token_bytes(32)
COOKIE = "shop_session"


def _signature(payload: str) -> bytes:
    return hmac.new(SECRET, payload.encode(), hashlib.sha256).hexdigest().encode()


def session_cookie(name: str) -> str:
    payload = base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
    return f"{payload}.{_signature(payload).decode()}"


def signed_in(request: Request) -> str | None:
    """The signed-in customer's name, or None: the assistant's `authenticate`."""
    payload, _, signature = request.cookies.get(COOKIE, "").rpartition(".")
    if not payload or not hmac.compare_digest(signature.encode(), _signature(payload)):
        return None
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


ORDERS = {  # the order book: in memory, a stand-in for your database
    "ada": {"A-1001": "teapot, shipped", "A-1002": "kettle, being packed"},
    "bob": {"B-2001": "toaster, delivered"},
}


def my_orders(ctx: ToolContext) -> dict[str, str]:
    """The signed-in customer's orders: each one's item and status, by order id."""
    return ORDERS.get(ctx.user or "", {})


OrderId = Annotated[str, Field(examples=["A-1001"])]  # `examples`: what `--provider dev` sends


def order_status(ctx: ToolContext, order_id: OrderId) -> str:
    """Where one of the signed-in customer's orders is.

    Args:
        order_id: the order's id, like A-1001
    """
    status = ORDERS.get(ctx.user or "", {}).get(order_id)  # only the customer's own orders
    return f"{order_id}: {status}" if status else f"{order_id} is not one of your orders."


def order_card(ctx: ToolContext, order_id: OrderId) -> Card:
    """One of the signed-in customer's orders as a card the customer sees: item, status and
    where to track it.

    Args:
        order_id: the order's id, like A-1001
    """
    status = ORDERS.get(ctx.user or "", {}).get(order_id)
    if status is None:
        raise ToolRefused(f"{order_id} is not one of your orders.")
    item, _, where = status.partition(", ")
    track = f"https://carrier.example/track/{order_id}"
    return Card(f"Order {order_id}", {"Item": item, "Status": where}, links=[("Track it", track)])


@tool(needs_approval=True)  # the customer approves each cancellation in the chat first
def cancel_order(ctx: ToolContext, order_id: Annotated[str, Field(examples=["A-1002"])]) -> str:
    """Cancel one of the signed-in customer's orders that has not left the warehouse yet.

    Args:
        order_id: the order's id, like A-1002
    """
    orders = ORDERS.get(ctx.user or "", {})
    status = orders.get(order_id)
    if status is None:
        return f"{order_id} is not one of your orders."
    if not status.endswith("being packed"):
        return f"{order_id} has left the warehouse: it can no longer be cancelled."
    orders[order_id] = status.replace("being packed", "cancelled")
    return f"{order_id} is cancelled."


INSTRUCTIONS = (
    "You help customers of Example Shop with their orders. Look them up with my_orders "
    "and order_status; never guess. Show one with order_card, cancel one with cancel_order "
    "when the customer asks. Answer briefly, in the customer's language."
)

assistant = Assistant(
    name="Shop helper",
    instructions=INSTRUCTIONS,
    tools=[my_orders, order_status, order_card, cancel_order],
    captions={  # what the reader sees once a tool ran
        "my_orders": {
            "en": "Looked up your orders",
            "es": "Consultó tus pedidos",
            "fr": "A consulté vos commandes",
        },
        "order_status": {
            "en": "Checked an order",
            "es": "Consultó un pedido",
            "fr": "A vérifié une commande",
        },
        "order_card": {
            "en": "Showed an order",
            "es": "Mostró un pedido",
            "fr": "A affiché une commande",
        },
        "cancel_order": {  # "ask": what the approval card asks the customer to allow
            "en": {"done": "Cancelled an order", "ask": "Cancel an order"},
            "es": {"done": "Canceló un pedido", "ask": "Cancelar un pedido"},
            "fr": {"done": "A annulé une commande", "ask": "Annuler une commande"},
        },
    },
    messages={  # turnkeeper ships English and Spanish; every key (docs/design.md §7) in French:
        "fr": {
            "ui.placeholder": "Posez une question…",
            "ui.send": "Envoyer",
            "ui.stop": "Arrêter",
            "ui.you": "Vous",
            "ui.working": "En cours…",
            "ui.sign_in": "Connectez-vous pour parler à l’assistant.",
            "ui.connection_trouble": "Impossible de joindre l’assistant. Nouvel essai en cours…",
            "ui.busy": "L’assistant répond encore dans un autre onglet ; attendez sa réponse.",
            "ui.conversations": "Vos conversations",
            "ui.new_conversation": "Nouvelle conversation",
            "ui.no_conversations": "Pas encore de conversation.",
            "ui.earlier": "Afficher les messages précédents",
            "ui.approval_title": "L’assistant veut faire ceci :",
            "ui.approval_unknown": "Exécuter {tool} ?",
            "ui.approve": "Approuver",
            "ui.deny": "Refuser",
            "ui.you_approved": "Vous avez approuvé : {action}",
            "ui.you_denied": "Vous avez refusé : {action}",
            "ui.rate_up": "Bonne réponse",
            "ui.rate_down": "Mauvaise réponse",
            "ui.rename": "Renommer",
            "ui.delete": "Supprimer",
            "ui.delete_confirm": (
                "Supprimer cette conversation et tout son contenu ? C’est définitif."
            ),
            "ui.conversation_title": "Titre",
            "ui.save": "Enregistrer",
            "ui.cancel": "Annuler",
            "ui.ask_again_at": "Vous pourrez reposer une question à {time}.",
            "limits.turns_per_minute": "Vous avez posé trop de questions dans la dernière minute.",
            "limits.tokens_per_day": "Vous avez épuisé ce que l’assistant vous accorde ce jour.",
            "limits.cost_per_day": "Vous avez épuisé ce que l’assistant vous accorde ce jour.",
            "notices.limit_reached": (
                "Vous avez atteint la limite du jour ; l’assistant s’est arrêté avant la fin."
            ),
            "activity.compacted": "A résumé le début de la conversation",
            "errors.ai_truncated": (
                "La réponse a été coupée avant d’être complète ; elle n’est pas affichée."
            ),
            "errors.ai_refused": "L’assistant a refusé de répondre à cette demande.",
            "errors.ai_context_full": (
                "Cette conversation est trop longue pour continuer. Commencez-en une nouvelle."
            ),
            "errors.ai_iteration_limit": (
                "L’assistant a fait trop d’étapes et s’est arrêté avant la fin."
            ),
            "errors.ai_time_limit": "L’assistant a manqué de temps avant de finir.",
            "errors.ai_unavailable": (
                "L’assistant est indisponible pour le moment. Réessayez dans un instant."
            ),
            "errors.ai_failed": "Un problème est survenu et l’assistant n’a pas pu répondre.",
            "errors.ai_too_large": (
                "La réponse était trop longue pour être affichée ; elle n’a pas été gardée."
            ),
            "notices.stopped": "Arrêté.",
            "notices.approval_timeout": (
                "Aucune réponse n’est venue ; l’assistant a cessé d’attendre."
            ),
            "activity.read_file": "A lu un fichier",
            "activity.web_search": "A cherché sur le web",
            "activity.web_fetch": "A consulté cette adresse",
            "activity.code_execution": "A exécuté du code",
            "activity.get_current_time": "A regardé l’heure",
            "activity.convert_time": "A converti une heure",
            "cli.outcome.finished": "Terminé",
            "cli.outcome.truncated": "Coupé",
            "cli.outcome.refused": "Refusé",
            "cli.outcome.context_exceeded": "Conversation trop longue",
            "cli.outcome.iteration_limit": "Trop d’étapes",
            "cli.outcome.time_limit": "Temps écoulé",
            "cli.outcome.stopped": "Arrêté",
            "cli.outcome.failed": "Échec",
            "cli.outcome.limit_reached": "Limite atteinte",
        }
    },
    authenticate=signed_in,
)

# Turns run in this process, unless SHOP_WORKERS=external (PostgreSQL only): then
# `turnkeeper worker shop:assistant` processes run them.
chat = assistant.asgi(
    database=os.environ.get("SHOP_DATABASE", "sqlite:///shop.db"),
    worker=os.environ.get("SHOP_WORKERS") != "external",
)


def page(body: str, status_code: int = 200) -> HTMLResponse:
    head = '<!doctype html><html lang="en"><meta charset="utf-8"><title>Example Shop</title>'
    return HTMLResponse(f"{head}<h1>Example Shop</h1>{body}", status_code)


async def home(request: Request) -> Response:
    name = signed_in(request)
    if name is None:
        who = '<p>You are not signed in. <a href="/sign-in">Sign in</a></p>'
    else:
        who = (
            f"<p>Signed in as <strong>{html.escape(name)}</strong>.</p>"
            '<form method="post" action="/sign-out"><button>Sign out</button></form>'
        )
    return page(f'{who}<p><a href="/assistant/">Ask the shop helper</a></p>')


SIGN_IN_FORM = """<form method="post" action="/sign-in">{error}
  <label>Your name <input name="name" required autofocus></label> <button>Sign in</button>
</form>"""


async def sign_in(request: Request) -> Response:
    if request.method == "GET":
        return page(SIGN_IN_FORM.format(error=""))
    form = parse_qs((await request.body()).decode(errors="replace"))
    name = form.get("name", [""])[0].strip()
    if not name or len(name) > 64:
        error = "<p>Write a name of 1 to 64 characters.</p>"
        return page(SIGN_IN_FORM.format(error=error), 400)
    response = RedirectResponse("/assistant/", status_code=303)
    # SameSite=Lax: other sites cannot call the assistant's API as this reader. HTTPS: secure=True
    response.set_cookie(COOKIE, session_cookie(name), httponly=True, samesite="lax")
    return response


async def sign_out(request: Request) -> Response:
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE)
    return response


app = Starlette(
    routes=[
        Route("/", home),
        Route("/sign-in", sign_in, methods=["GET", "POST"]),
        Route("/sign-out", sign_out, methods=["POST"]),
        Mount("/assistant", app=chat),  # the widget at /assistant/, its API under it
    ],
    lifespan=chat.lifespan,  # opens the assistant's database and runs its turns
)


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser(description="Example Shop and its assistant")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")  # shows the model
    uvicorn.run(app, host="127.0.0.1", port=parser.parse_args().port)
