"""Whose turns a database holds: the one line a process says at start.

Every turn records the assistant that queued it (`records.Owner`: its name and
version), and a worker claims its own assistant's turns by name, whichever version
queued them. A process says at start which assistant and version it serves, on which
queue, and whether the database holds queued turns it never runs (another assistant's),
so the operator starts the right `turnkeeper worker APP`; and how many it runs that
another version of its assistant queued.
"""

from __future__ import annotations

import logging

from ..i18n import counted
from ..service.ownership import queue_of
from ..store import Store
from ..store.records import Owner

logger = logging.getLogger("turnkeeper.server")


async def tell_owners(
    store: Store, owner: Owner, app: str | None, *, always: bool = True
) -> str | None:
    """The line: what this process serves (`app`: its import string; None for the demo
    assistant), and the database's queued turns of other assistants and other versions;
    a warning when some are another assistant's. Not `always` (a process that runs its
    turns itself, on SQLite): only that warning. The line said, or None."""
    queued = await store.owners()
    theirs = [(o, n) for o, n in queued if o.assistant != owner.assistant]
    versions = [(o, n) for o, n in queued if o.assistant == owner.assistant and o != owner]
    ours = f"the demo assistant {owner}" if app is None else f"{app}, assistant {owner}"
    line = f"this process serves {ours} from queue {queue_of(owner)}; "
    if theirs:
        listed = ", ".join(f"{counted(n, 'turn')} of assistant {o}" for o, n in theirs)
        line += (
            f"the database has {listed} queued, which it never runs: start"
            " `turnkeeper worker APP` (or `serve APP`) with their assistant"
        )
    else:
        line += "the database has no queued turn it cannot take"
        if not always:
            return None
    if versions:
        other = ", ".join(f"{counted(n, 'turn')} of version {o.version}" for o, n in versions)
        line += f"; it runs those queued by other versions of it ({other})"
    logger.log(logging.WARNING if theirs else logging.INFO, "%s", line)
    return line
