"""Whose turns a database holds: the line a process says at start when some are another
assistant's.

Every turn records the assistant that queued it (`records.Owner`), and a process
claims only its own assistant's turns. A process started with another assistant, or
with none (the demo assistant), against a database whose turns are another's would
otherwise sit beside them in silence: it says so once, naming both, so the operator
starts the right `turnkeeper worker APP`.
"""

from __future__ import annotations

import logging

from ..i18n import counted
from ..store import Store
from ..store.records import Owner

logger = logging.getLogger("turnkeeper.server")


async def tell_other_owners(store: Store, owner: Owner, app: str | None) -> str | None:
    """One warning line if the store has turns not done of assistants other than `owner`
    (`app`: its import string; None for the demo assistant); the line, or None."""
    others = await store.owners(owner.fingerprint)
    if not others:
        return None
    theirs = ", ".join(f"{counted(n, 'turn')} of assistant {o}" for o, n in others)
    ours = f"the demo assistant {owner}" if app is None else f"{app}, assistant {owner}"
    line = (
        f"this database has {theirs} not done; this process serves {ours}, which never runs"
        " them: start `turnkeeper worker APP` (or `serve APP`) with their assistant"
    )
    logger.warning("%s", line)
    return line
