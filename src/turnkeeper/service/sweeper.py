"""The sweeper: finalises turns whose worker stopped renewing its lease.

A worker that is killed, crashes or hangs stops renewing; once its lease has
expired the sweeper takes the turn over (bumping its fence) and ends it through
`lifecycle.fail()`, from the last checkpoint, in one store transaction. It never
runs a turn again. It runs in the serving process and in every worker; two
sweepers racing for one turn are safe: one ends it, the other learns it was
already ended (nothing written, nothing taken for an outage).

Given the queue (`holding`), it also finalises turns left `queued` with nothing
behind them: queued for `unheld_after` seconds and held by no queue (a claim
whose failure could not be written, an API process that died between creating
a turn and handing it over). Nothing stays queued with no job behind it.

With `resume_after_crash` (resume.py), a turn whose lease expired is queued again
from its last checkpoint instead (at most `max_resumes` times); and a turn that
waited for a person longer than `approval_timeout` ends `stopped`. Each of these is
the turn's own setting, recorded when it was queued (`records.Fate`): the sweeper's
process applies its own only to a turn queued before turns recorded theirs. Turns
left queued are the concern of their own assistant's sweeper (`owner`) only: a
process of another assistant never claims them, and must not end them either.

A queued turn that no worker claimed for `unclaimed_after` seconds, while no turn of its
assistant runs (no worker of it is there, busy), says so: its state shows the notice
`notices.waiting_for_worker` ("Waiting for the assistant to start…"), its event log an
`activity` event, the `turnkeeper_turns_unclaimed` gauge counts it, and one warning names
its queue and assistant. Past `unclaimed_timeout` it ends `failed` (`errors.no_worker`).
A procrastinate job behind it changes nothing: a job no worker listens for runs nothing.

While the store cannot be reached, sweeps fail; the first failure is logged and
the sweeper tries again every interval. Once it reaches the store again it
finalises nothing for one `lease`: during an outage no worker could renew, so
every lease may have expired, and the workers that lived through it get one
lease to renew theirs first. An outage alone never fails a turn whose worker is
alive (docs/design.md §8).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..observe.report import Reporter, log_report
from ..outcomes import Ending
from ..store import EXPIRED, UNCLAIMED, FenceLost, Store
from ..store.events import RETENTION
from ..store.records import Owner
from ..turn.lifecycle import Enqueue, WaitEnd, fail, no_worker, resume_crashed, stop_waiting
from ..turn.resume import Resuming
from .job import DEFAULT_LEASE, fated
from .ownership import queue_of

if TYPE_CHECKING:  # prometheus-client comes with the server and postgres extras
    from ..observe.metrics import Metrics

logger = logging.getLogger("turnkeeper.sweeper")

DEFAULT_INTERVAL = 5.0
UNHELD_AFTER = 60.0
"""Seconds a turn may wait `queued` with no queue holding it before it is finalised."""
UNCLAIMED_AFTER = 60.0
"""Seconds a queued turn waits for a worker before it says so."""
UNCLAIMED_TIMEOUT = 600.0
"""Seconds a queued turn waits for a worker before it ends `failed` (`errors.no_worker`)."""
WAITING_FOR_WORKER = "notices.waiting_for_worker"
FORGET_EVERY = 300.0
"""Seconds between two deletions of events past their retention, at least."""


@runtime_checkable
class Holding(Protocol):
    """A queue that can say which turns it will still run (`LocalQueue`, the
    procrastinate queue)."""

    async def holding(self) -> set[str]:
        """The ids of the turns this queue will still run."""
        ...


class Sweeper:
    """Ends, through `lifecycle.fail()`, the turns whose worker's lease expired and the
    queued turns no queue holds; `run()` sweeps every `interval` seconds."""

    def __init__(
        self,
        store: Store,
        *,
        interval: float = DEFAULT_INTERVAL,
        reporter: Reporter = log_report,
        metrics: Metrics | None = None,
        queue: Holding | None = None,
        unheld_after: float = UNHELD_AFTER,
        lease: float = DEFAULT_LEASE,
        resuming: Resuming | None = None,
        requeue: Enqueue | None = None,
        event_retention: float = RETENTION,
        owner: Owner | None = None,
        unclaimed_after: float = UNCLAIMED_AFTER,
        unclaimed_timeout: float = UNCLAIMED_TIMEOUT,
    ) -> None:
        self.owner = owner
        self.unclaimed_after = unclaimed_after
        self.unclaimed_timeout = unclaimed_timeout
        """The assistant this sweeper's process serves: the queued turns it ends are its own."""
        self.resuming = resuming or Resuming()
        self.requeue = requeue
        """Where a crashed turn that resumes is queued again (needed to resume one)."""
        self.store = store
        self.interval = interval
        self.reporter = reporter
        self.metrics = metrics
        self.queue = queue
        self.unheld_after = unheld_after
        self.lease = lease
        self.event_retention = event_retention
        """Seconds a turn's events are kept after it ended (events.py)."""
        self.forgot = -math.inf
        """When (monotonic seconds) the last sweep deleted events past their retention."""
        self.failing = 0
        """Sweeps failed in a row."""
        self.hold_until = 0.0
        """When (monotonic seconds) sweeping starts again after the store was reached again."""

    async def sweep(self) -> list[str]:
        """Finalise every turn whose lease has expired, and every queued turn no queue
        holds; the ids finalised here."""
        swept = []
        for turn_id in await self.store.expired():
            end = await self._expired(turn_id)
            if end is not None:
                logger.warning(
                    "turn %s: its worker's lease expired; finalised as %s", turn_id, end.outcome
                )
                swept.append(turn_id)
        swept += await self._unheld()
        swept += await self._unclaimed()
        swept += await self._unanswered()
        await self._forget()
        if self.metrics is not None and swept:
            self.metrics.swept.inc(len(swept))
        return swept

    async def _expired(self, turn_id: str) -> Ending | None:
        """Resume the turn if it was queued to resume after a crash (None), else end it through
        `fail()`: its `Ending` (None too if it was not there to take). One take-over either
        way."""
        turn = await self.store.turn(turn_id)
        resuming = fated(self.resuming, None if turn is None else turn.fate)
        if not (resuming.resume_after_crash and self.requeue is not None):
            return await fail(self.store, turn_id, EXPIRED, reporter=self.reporter)
        max_resumes = resuming.max_resumes
        try:
            return await resume_crashed(
                self.store, turn_id, self.requeue, max_resumes, reporter=self.reporter
            )
        except FenceLost as e:  # decided by someone else meanwhile: a refusal, not an outage
            logger.info("%s; the turn is left as its new holder wrote it", e)
            return None

    async def _unclaimed(self) -> list[str]:
        """Show the waiting notice on the turns no worker claimed for `unclaimed_after`
        seconds (one warning each), and end those past `unclaimed_timeout`."""
        mine = None if self.owner is None else self.owner.assistant
        after, timeout = self.unclaimed_after, self.unclaimed_timeout
        found = await self.store.unclaimed(after, timeout, mine)
        ended = []
        for turn_id, name, late in found:
            where = f"queue {queue_of(None if name is None else Owner(name, ''))}"
            whose = "no assistant" if name is None else f"assistant {name!r}"
            if late:
                why = f"no worker of {whose} claimed it from {where} within {timeout:g} s"
                if await no_worker(self.store, turn_id, UNCLAIMED, why, reporter=self.reporter):
                    logger.warning("turn %s: %s; ended failed", turn_id, why)
                    ended.append(turn_id)
            elif await self.store.show_unclaimed(turn_id, WAITING_FOR_WORKER):
                logger.warning(
                    "turn %s has waited over %g s on %s and no worker of %s has claimed it:"
                    " start `turnkeeper worker APP` with that assistant",
                    turn_id, after, where, whose,
                )  # fmt: skip
        if self.metrics is not None:
            self.metrics.unclaimed.set(len(found) - len(ended))
        return ended

    async def _unanswered(self) -> list[str]:
        """End the turns that waited for a person longer than the approval timeout."""
        ended = []
        for turn_id in await self.store.waiting(self.resuming.approval_timeout):
            if await stop_waiting(self.store, turn_id, WaitEnd.NO_ANSWER, self.reporter):
                logger.warning("turn %s: nobody answered its approval in time; stopped", turn_id)
                ended.append(turn_id)
        return ended

    async def _forget(self) -> None:
        """Delete the events of turns that ended longer ago than their retention, once
        every `FORGET_EVERY` seconds at most."""
        if time.monotonic() - self.forgot < FORGET_EVERY:
            return
        self.forgot = time.monotonic()
        forgotten = await self.store.forget_events(self.event_retention)
        if forgotten:
            logger.info("deleted %d events of turns ended over %g s ago", forgotten,
                        self.event_retention)  # fmt: skip

    async def _unheld(self) -> list[str]:
        if self.queue is None:
            return []
        mine = None if self.owner is None else self.owner.assistant
        waiting = await self.store.queued(older_than=self.unheld_after, assistant=mine)
        if not waiting:
            return []
        held = await self.queue.holding()  # read after: a turn claimed meanwhile is not queued
        swept = []
        for turn_id in waiting:
            if turn_id in held:
                continue
            end = await fail(self.store, turn_id, UNCLAIMED, reporter=self.reporter)
            if end is not None:
                logger.warning(
                    "turn %s: queued with no job behind it; finalised as %s", turn_id, end.outcome
                )
                swept.append(turn_id)
        return swept

    async def run(self) -> None:
        """Sweep every `interval` seconds until cancelled; a failed sweep is retried. A
        cancel that a sweep's database driver took for its own (and did not raise) still
        stops it: the process stopping must not wait on a sweeper that missed it."""
        task = asyncio.current_task()
        while True:
            await self.tick()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            await asyncio.sleep(self.interval)

    async def tick(self) -> None:
        """One sweep; or, after failed sweeps, a look that starts a lease's hold if the
        store answers; or nothing while the hold lasts."""
        if time.monotonic() < self.hold_until:
            return
        try:
            if self.failing:
                await self.store.expired()  # the store answers: hold, finalise nothing yet
                logger.warning(
                    "the sweeper reached the store again; it finalises nothing for %g s,"
                    " while live workers renew their leases",
                    self.lease,
                )
                self.failing, self.hold_until = 0, time.monotonic() + self.lease
                return
            await self.sweep()
        except Exception:
            self.failing += 1
            if self.failing == 1:
                logger.exception("the sweep failed; trying again every %.1f s", self.interval)
