"""The workloads, one module each, run in this order.

Each module has `run(ctx: Context) -> Section`; the functions its workers run
live in the same module. Workloads that need parts not yet on this branch
(the Anthropic adapter, the store, the HTTP API) report their rows as pending.
"""

from __future__ import annotations

import importlib
from types import ModuleType

ALL = [
    "a_loop",
    "a_wire",
    "b_concurrency",
    "b_store",
    "c_history",
    "c_store",
    "d_polling",
    "e_scale_out",
    "f_prompt_cache",
    "g_live",
    "h_compaction",
]


def load(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")
