"""A notes assistant for the browser tests of issue 33: a tool that needs the reader's yes,
with its ask text ("Delete a note") beside its past-tense caption in English, Spanish and
German; instructions that name who asks; a German catalog of the widget's words (a third
locale an application adds); and readers who sign in (the `reader` cookie names them, as in
desk.py).
"""

from __future__ import annotations

from starlette.requests import Request

from turnkeeper import Assistant, ToolContext, tool


@tool(needs_approval=True)
def delete_note(title: str, folder: str = "inbox") -> str:
    """Delete one of the reader's notes.

    Args:
        title: the note's title
        folder: the folder it is in
    """
    return f"deleted {title} from {folder}"


@tool(needs_approval=True)
def archive_note(title: str) -> str:
    """Archive one of the reader's notes (no ask text: the card names the tool).

    Args:
        title: the note's title
    """
    return f"archived {title}"


async def instructions(ctx: ToolContext) -> str:
    """Who asks, in which language: asked once per turn, where the turn runs."""
    return f"You keep {ctx.user}'s notes. Answer in {ctx.locale}."


def signed_in(request: Request) -> str | None:
    return request.cookies.get("reader") or None


GERMAN = {
    "ui.placeholder": "Frag etwas…",
    "ui.send": "Senden",
    "ui.stop": "Stopp",
    "ui.you": "Du",
    "ui.working": "Arbeitet…",
    "ui.conversations": "Unterhaltungen",
    "ui.new_conversation": "Neue Unterhaltung",
    "ui.no_conversations": "Noch keine Unterhaltungen.",
    "ui.approval_title": "Der Assistent möchte Folgendes tun:",
    "ui.approval_unknown": "{tool} ausführen?",
    "ui.approve": "Erlauben",
    "ui.deny": "Ablehnen",
    "ui.you_approved": "Du hast erlaubt: {action}",
    "ui.you_denied": "Du hast abgelehnt: {action}",
    "ui.rate_up": "Gute Antwort",
    "ui.rate_down": "Schlechte Antwort",
    "ui.rename": "Umbenennen",
    "ui.delete": "Löschen",
    "ui.delete_confirm": (
        "Diese Unterhaltung mit allem Inhalt löschen? Das lässt sich nicht rückgängig machen."
    ),
    "ui.conversation_title": "Titel",
    "ui.save": "Speichern",
    "ui.cancel": "Abbrechen",
    "notices.stopped": "Gestoppt.",
}

assistant = Assistant(
    name="Notes",
    instructions=instructions,
    tools=[delete_note, archive_note],
    captions={
        "delete_note": {
            "en": {"done": "Deleted a note", "ask": "Delete a note"},
            "es": {"done": "Borró una nota", "ask": "Borrar una nota"},
            "de": {"done": "Hat eine Notiz gelöscht", "ask": "Eine Notiz löschen"},
        }
    },
    messages={"de": GERMAN, "es": {"assistant.name": "Notas"}},
    authenticate=signed_in,
)
