"""A test assistant for turns that wait and resume: a tool that needs a person's yes, an
idempotent tool and one that is not, each logging its runs to the file `TK_TOOL_LOG`.

    turnkeeper serve payments:assistant --app-dir tests/apps

`look_up` and `charge` block the first time they run (after telling the model server at
`ANTHROPIC_BASE_URL` they started), so a test can kill the process during them; run
again, they answer at once.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx

from turnkeeper import Assistant, tool


def _ran(name: str) -> int:
    """Log a run of `name`; how many runs came before it (without a log: one, so nothing
    blocks)."""
    if "TK_TOOL_LOG" not in os.environ:
        return 1
    log = Path(os.environ["TK_TOOL_LOG"])
    before = log.read_text().split().count(name) if log.exists() else 0
    with log.open("a") as out:
        out.write(name + "\n")
    return before


async def _blocks_the_first_time(name: str) -> None:
    if _ran(name) == 0:
        async with httpx.AsyncClient() as client:
            await client.post(
                f"{os.environ['ANTHROPIC_BASE_URL']}/tool-started", json={"tool": name}
            )
        await asyncio.Event().wait()


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete one of the reader's files.

    Args:
        path: the file's name
    """
    _ran("delete_file")
    return f"deleted {path}"


@tool(idempotent=True)
async def look_up(query: str) -> str:
    """Look something up (safe to do twice).

    Args:
        query: what to look up
    """
    await _blocks_the_first_time("look_up")
    return f"found {query}"


@tool
async def charge(amount: int) -> str:
    """Charge the reader's card (not safe to do twice).

    Args:
        amount: in cents
    """
    await _blocks_the_first_time("charge")
    return f"charged {amount}"


assistant = Assistant(
    name="Payments desk",
    tools=[delete_file, look_up, charge],
    captions={
        "delete_file": {
            "en": {"done": "Deleted a file", "ask": "Delete a file"},
            "es": {"done": "Borró un archivo", "ask": "Borrar un archivo"},
        }
    },
)
