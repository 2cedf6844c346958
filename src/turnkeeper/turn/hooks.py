"""What the loop tells the world, and asks of it, while a turn runs.

The loop knows nothing about storage, HTTP or queues; it calls these hooks in a
fixed order:

- `started` once, with the `running` state;
- per model call that returns and asks for tools, `record_usage` at once,
  before the tools run (a crash never loses billed tokens); a call that asks
  for none is followed at once, with nothing awaited in between, by the
  `checkpoint` or `finish` that carries its usage;
- per iteration, **one** `checkpoint`: the history appended since the last
  write, the state that follows it, the usage and the model calls, written
  together (a `Checkpoint`, one of the records in `records.py` that the store
  writes);
- at the end, exactly once whatever happened, **one** `finish`: the history
  tail, the final state (`done: true`), usage and calls; it clears the turn's
  checkpoint and cancel flag. Nobody writes after it.
- or instead of `finish`, when a tool waits for a person's yes, **one** `wait`:
  the checkpoint of a `waiting` state and the resume record (`ResumeRecord`,
  approvals.py). The turn is not done (nor in flight); another job resumes it.

Each write carries the turn's events since the last (`Checkpoint.events`, the
event log: events.py); only text deltas, coalesced, and the start of a round of
tools are written on their own, through `events`.

`should_stop` is asked before every model call, and `wait_stop` is awaited beside
the turn from its first model call to its end (started again at the next call if
it raised): when it returns during a call, the call is aborted and the turn ends
`stopped` with nothing appended for it. Nothing is awaited between a
`checkpoint` and the `should_stop` that follows it, so hooks may answer that
check from what the checkpoint's write read back (`StoreHooks` does: the cancel
flag). `report` gets every reported ending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from ..observe.report import Report, Reporter, log_report
from ..state import PublishedState
from ..store.records import Checkpoint, NewEvent, ResumeRecord, TurnEvent
from ..usage import Usage


class Hooks(Protocol):
    """What the loop tells the world, and asks of it, while a turn runs, in the order the
    module's docstring gives. `LocalHooks` keeps it all in memory; the job's `StoreHooks`
    writes it to the store. A hook that raises mid-turn ends it `failed` (reported once);
    the one final write is still attempted, then the exception goes on."""

    async def should_stop(self) -> bool:
        """Whether the turn has been asked to stop; asked before every model call."""
        ...

    async def wait_stop(self) -> None:
        """Return once the turn is asked to stop (at once if it was already); may never
        return. Never raises: a passing failure to learn of a stop is its own to retry."""
        ...

    def limit_reached(self) -> str | None:
        """The key of the day's limit the turn's user has used up (`limits.tokens_per_day`,
        `limits.cost_per_day`), as the last write read the ledger; asked before every model
        call, after `should_stop`. None: go on (always, without limits)."""
        ...

    async def started(self, state: PublishedState) -> None:
        """Publish the turn's `running` state, once, before anything else."""
        ...

    async def record_usage(self, usage: Usage) -> None:
        """Keep the usage so far (the turn's sums), at once after a call that asked for
        tools, so a crash while they run loses no billed tokens."""
        ...

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        """Write one iteration: the history it appended, its state, usage and calls."""
        ...

    async def finish(self, final: Checkpoint) -> None:
        """The one final write, exactly once, however the turn ended: the history's tail,
        the final state (`done: true`), usage and calls; nobody writes after it."""
        ...

    async def wait(self, checkpoint: Checkpoint, record: ResumeRecord) -> None:
        """Instead of `finish`, when a tool waits for a person's yes: the turn's resume
        record, then the checkpoint of its `waiting` state. The turn is not done."""
        ...

    async def events(self, batch: Sequence[NewEvent]) -> None:
        """Write events that cannot wait for the turn's next write: coalesced text deltas
        (and what was pending before them), the start of a round of tools."""
        ...

    def report(self, report: Report) -> None:
        """Report an ending that someone should see, or an incident (a tool that raised)."""
        ...


class LocalHooks:
    """Hooks that keep everything in memory: for the CLI, scripts and tests."""

    def __init__(self, reporter: Reporter = log_report) -> None:
        self.reporter = reporter
        self.published: list[PublishedState] = []
        """Every state the turn published, in order; the last is `done`."""
        self.checkpoints: list[Checkpoint] = []
        self.final: Checkpoint | None = None
        self.waiting_record: ResumeRecord | None = None
        """The resume record of a turn that stopped to wait for approval."""
        self.finishes = 0
        """Final writes so far: one per turn, whatever happened."""
        self.reports: list[Report] = []
        self.usage = Usage()
        self._kept: list[NewEvent] = []
        """Every event the turn wrote, in order, numbered only when `log` is read."""
        self._log: list[TurnEvent] = []
        self.stop_requested = False
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Ask the turn to stop: the model call in flight is aborted, no new one starts."""
        self.stop_requested = True
        self._stopping.set()

    @property
    def state(self) -> PublishedState | None:
        """The last published state."""
        return self.published[-1] if self.published else None

    async def should_stop(self) -> bool:
        return self.stop_requested

    async def wait_stop(self) -> None:
        await self._stopping.wait()

    def limit_reached(self) -> str | None:
        return None

    async def started(self, state: PublishedState) -> None:
        self.published.append(state)

    async def record_usage(self, usage: Usage) -> None:
        self.usage = usage.copy()

    async def events(self, batch: Sequence[NewEvent]) -> None:
        self.keep(batch)

    def keep(self, batch: Sequence[NewEvent]) -> None:
        """Keep `batch` in the log (numbered when the log is read: nothing per write)."""
        self._kept += batch

    @property
    def log(self) -> list[TurnEvent]:
        """Every event the turn wrote, numbered from 1, in order."""
        log, kept = self._log, self._kept
        for seq in range(len(log) + 1, len(kept) + 1):
            kind, body = kept[seq - 1]
            log.append(TurnEvent(seq, kind, body))
        return log

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        self.keep(checkpoint.events)
        self.checkpoints.append(checkpoint)
        self.usage = checkpoint.usage  # the checkpoint's own copy, which nothing changes
        self.published.append(checkpoint.state)

    async def finish(self, final: Checkpoint) -> None:
        self.keep(final.events)
        self.final = final
        self.finishes += 1
        self.usage = final.usage
        self.published.append(final.state)

    async def wait(self, checkpoint: Checkpoint, record: ResumeRecord) -> None:
        self.waiting_record = record
        await self.checkpoint(checkpoint)

    def report(self, report: Report) -> None:
        self.reports.append(report)
        self.reporter(report)
