"""Whose a turn is, and the settings that decide its fate, as a turn records them when it
is queued (docs/design.md §8, "What a turn needs travels with the turn").

A process's flags decide nothing for a turn another process queued: the turn carries
its assistant (`Owner`: a name and a fingerprint, so a worker claims only its own
assistant's turns) and its `Fate` (resume after a crash, how often, the approval
timeout, the budget), which every job and sweeper applies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ..budget import Budget
from ..store.records import Fate, Owner
from ..turn.resume import Resuming
from ..wire import ToolSpec


def owner_of(
    name: str, settings: Sequence[object], specs: Sequence[ToolSpec], resuming: Resuming
) -> Owner:
    """The assistant `name`, with twelve hex digits of a hash of what makes it itself: its
    `settings` (instructions, model and its settings), its Python tools' names, descriptions and
    schemas, and which tools wait for approval or may run again. Not what a turn records
    for itself (its fate), nor what a process may set apart (the provider chosen at start,
    the prompt cache, MCP servers, whose tools are known only once connected)."""
    identity = {
        "name": name,
        "settings": list(settings),
        "tools": [[s.name, s.description, s.input_schema] for s in specs],
        "needs_approval": sorted(resuming.needs_approval),
        "idempotent": sorted(resuming.idempotent),
    }
    text = json.dumps(identity, sort_keys=True, default=str, ensure_ascii=False)
    return Owner(name, hashlib.sha256(text.encode("utf-8")).hexdigest()[:12])


def fate_of(resuming: Resuming, budget: Budget) -> Fate:
    """What a turn records of its assistant's settings, for every process to apply."""
    return Fate(
        resuming.resume_after_crash,
        resuming.max_resumes,
        resuming.approval_timeout,
        budget.as_dict(),
    )
