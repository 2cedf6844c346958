"""Whose a turn is, and the settings that decide its fate, as a turn records them when it
is queued (docs/design.md §8, "What a turn needs travels with the turn").

A process's flags decide nothing for a turn another process queued: the turn carries
its assistant (`Owner`: a name, which workers run it, and a version, which says whether
the worker runs the same code) and its `Fate` (resume after a crash, how often, the
approval timeout, the budget), which every job and sweeper applies.

The version is the same in every process that loads the same assistant: it is a hash of
what can be compared without running code. A value is written as JSON; a function as
its `module.qualname` and a digest of its compiled code (never its `repr`, whose memory
address differs in every process), so a tool whose body changed is a new version.
"""

from __future__ import annotations

import hashlib
import json
import types
from collections.abc import Sequence
from typing import Any

from ..budget import Budget
from ..errors import ConfigError
from ..store.records import Fate, Owner
from ..turn.resume import Resuming
from ..wire import ToolSpec

QUEUE = "turnkeeper_turns"
"""The procrastinate queue of turns that record no assistant (queued before turns did)."""
MAX_VERSION = 64
"""The most characters an explicit `Assistant(version=...)` may have."""


def owner_of(
    name: str,
    settings: Sequence[object],
    specs: Sequence[ToolSpec],
    resuming: Resuming,
    functions: Sequence[object] = (),
) -> Owner:
    """The assistant `name`, with twelve hex digits of a hash of what makes it itself: its
    `settings` (instructions, model and its settings), its Python tools' names, descriptions
    and schemas and their `functions`' code, and which tools wait for approval or may run
    again. Not what a turn records for itself (its fate), nor what a process may set apart
    (the provider chosen at start, the prompt cache, MCP servers, whose tools are known only
    once connected)."""
    identity = {
        "name": name,
        "settings": [comparable(s) for s in settings],
        "tools": [[s.name, s.description, s.input_schema] for s in specs],
        "code": [comparable(f) for f in functions],
        "needs_approval": sorted(resuming.needs_approval),
        "idempotent": sorted(resuming.idempotent),
    }
    text = json.dumps(identity, sort_keys=True, default=comparable, ensure_ascii=False)
    return Owner(name, hashlib.sha256(text.encode("utf-8")).hexdigest()[:12])


def queue_of(owner: Owner | None) -> str:
    """The procrastinate queue of an assistant's turns, named by a hash of its name (not
    its version: a worker of another version of it runs them): a worker listens only on
    its own assistant's (and on `QUEUE`), so it never even fetches another's turns."""
    if owner is None:
        return QUEUE
    return f"{QUEUE}.{hashlib.sha256(owner.assistant.encode('utf-8')).hexdigest()[:12]}"


def comparable(value: object) -> Any:
    """`value` as JSON the same in every process: a function by its qualified name and its
    code's digest; anything else JSON cannot write, by its type's qualified name."""
    if isinstance(value, str | int | float | bool | type(None) | list | dict | tuple):
        return value
    if callable(value):
        value = getattr(value, "__tool_function__", value)
        code = getattr(value, "__code__", None)
        named = getattr(value, "__qualname__", type(value).__qualname__)
        where = f"{getattr(value, '__module__', '')}.{named}"
        return where if not isinstance(code, types.CodeType) else f"{where}:{digest(code)}"
    return f"{type(value).__module__}.{type(value).__qualname__}"


def digest(code: types.CodeType) -> str:
    """Twelve hex digits of a hash of compiled `code` (its bytecode, constants, and the
    names it uses), the same in every process of one Python version."""
    h = hashlib.sha256(code.co_code)
    for part in (code.co_names, code.co_varnames, code.co_freevars):
        h.update(repr(part).encode())
    for const in code.co_consts:
        h.update(_const(const).encode())
    return h.hexdigest()[:12]


def _const(const: object) -> str:
    if isinstance(const, types.CodeType):
        return digest(const)
    if isinstance(const, frozenset):  # its order follows the process's string hashing
        return repr(sorted(_const(c) for c in const))
    if isinstance(const, tuple):
        return repr([_const(c) for c in const])
    return repr(const)


def checked_version(version: object) -> str | None:
    """An explicit `Assistant(version=...)`: a non-empty string of at most 64 printable
    characters (it names the assistant's code in logs and in every turn), else `ConfigError`."""
    if version is None:
        return None
    if not (
        isinstance(version, str)
        and 0 < len(version) <= MAX_VERSION
        and version.isprintable()
        and version.strip() == version
    ):
        raise ConfigError(
            f"version must be a short string (1 to {MAX_VERSION} printable characters, no"
            f" spaces around it), got {version!r}"
        )
    return version


def check_unclaimed(after: object, timeout: object) -> None:
    """`ConfigError` unless `unclaimed_after` and `unclaimed_timeout` are positive seconds."""
    for name, value in (("unclaimed_after", after), ("unclaimed_timeout", timeout)):
        if isinstance(value, bool) or not (isinstance(value, int | float) and value > 0):
            raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")


def fate_of(resuming: Resuming, budget: Budget) -> Fate:
    """What a turn records of its assistant's settings, for every process to apply."""
    return Fate(
        resuming.resume_after_crash,
        resuming.max_resumes,
        resuming.approval_timeout,
        budget.as_dict(),
    )
