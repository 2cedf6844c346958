"""A worker process: one contender, one event loop, requests on stdin, answers on stdout.

`python -m bench.worker CONTENDER` loads the contender (and so only its
framework), then answers JSON requests one line at a time:
`{"run": "bench.workloads.a_loop:slice", "args": {...}}` awaits that function
with this worker and the arguments and writes its JSON answer as one line.
Anything the frameworks print goes to stderr, never into the answers.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any, TextIO

from . import fake
from .contenders import load

Job = Callable[..., Coroutine[Any, Any, dict[str, Any]]]


class Worker:
    """What a workload's worker-side function gets: the contender and its turns by spec."""

    def __init__(self, contender: ModuleType) -> None:
        self.contender = contender
        self._turns: dict[fake.Spec, fake.Turn] = {}

    async def turn(self, spec: fake.Spec, *, warm: bool = True) -> fake.Turn:
        """The contender's turn for `spec`, made once and (unless `warm=False`) run once untimed."""
        if spec not in self._turns:
            self._turns[spec] = self.contender.make(spec)
            if warm:
                await self._turns[spec]()
        return self._turns[spec]


def job(name: str) -> Job:
    module, _, function = name.partition(":")
    found: Job = getattr(importlib.import_module(module), function)
    return found


def answer(out: TextIO, data: dict[str, Any]) -> None:
    out.write(json.dumps(data) + "\n")
    out.flush()


def serve(name: str) -> None:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    warnings.simplefilter("ignore")
    pending = None
    try:
        contender = load(name)
        pending = getattr(contender, "PENDING", None)
    except ImportError as e:
        pending = f"not installed: {e}"
    answer(out, {"ready": name, "pending": pending})
    if pending:
        return
    worker = Worker(contender)
    with asyncio.Runner() as runner:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                result: dict[str, Any] = runner.run(job(request["run"])(worker, **request["args"]))
            except Exception as e:
                traceback.print_exc()
                result = {"error": f"{type(e).__name__}: {e}"}
            answer(out, result)
    out.close()
    os._exit(0)  # skip the frameworks' interpreter teardown: nothing is left to flush


if __name__ == "__main__":
    serve(sys.argv[1])
