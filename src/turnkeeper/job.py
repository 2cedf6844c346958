"""A queued turn: `TurnJob` runs it once, and `failed()` finalises one that could not finish.

    claim (lease, fence) → load history → run_turn with store-backed hooks → finish
                                  │ timeout, crash, lost lease
                                  └──────────────▶ failed(): recover from the checkpoint

`tries = 1`: a turn that spent money and called tools is never run again. The
job's own timeout is the turn deadline plus a margin, so the final write always
happens; if it fires anyway, `failed()` runs. A worker that dies leaves its
lease to expire, and the sweeper finalises the turn through the same
`failed()`. Every write presents the fence the claim returned, so a worker
that wakes up after being taken over writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import state as published
from .activity import ACTIVITIES
from .budget import Budget
from .hooks import Checkpoint
from .loop import run_turn
from .outcomes import Outcome
from .providers import Provider, wire_format
from .report import Report, Reporter, log_report
from .store import FenceLost, Recovery, Store
from .tools import NoTools, Toolset
from .usage import Usage
from .wire import Message, ToolResult

logger = logging.getLogger("turnkeeper.job")

DEFAULT_LEASE = 30.0
JOB_MARGIN = 15.0
"""Seconds the job timeout adds to the turn deadline, for the final write."""


class StoreHooks:
    """The loop's hooks, written to the store under one fence.

    The final publish is held back: `TurnJob` writes it together with the tail
    of the history in one transaction, so whoever sees `done: true` also sees a
    history that is whole and valid for the next turn.
    """

    def __init__(self, store: Store, turn_id: str, fence: int, reporter: Reporter) -> None:
        self.store = store
        self.turn_id = turn_id
        self.fence = fence
        self.reporter = reporter
        self.written = 0
        """History messages the checkpoints have appended so far."""
        self.failure_reported = False
        """The loop reported the turn as failed; `failed()` need not report it again."""

    async def should_stop(self) -> bool:
        return await self.store.cancel_requested(self.turn_id)

    async def record_usage(self, usage: Usage) -> None:
        await self.store.record_usage(self.turn_id, self.fence, usage)

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        appended = list(checkpoint.appended)
        await self.store.checkpoint(
            self.turn_id, self.fence, checkpoint.iteration, appended, checkpoint.state
        )
        self.written += len(appended)

    async def publish(self, state: dict[str, Any]) -> None:
        if not state["done"]:
            await self.store.publish(self.turn_id, self.fence, state)

    async def clear(self) -> None:
        """Nothing yet: `Store.finish` clears the checkpoint and cancel flag in the final write."""

    def report(self, report: Report) -> None:
        self.failure_reported |= report.event == Outcome.FAILED.value
        self.reporter(report)


@dataclass
class TurnJob:
    """Runs queued turns with one provider and toolset; `await job.run(turn_id)`."""

    store: Store
    provider: Provider
    toolset: Toolset = field(default_factory=NoTools)
    budget: Budget = field(default_factory=Budget)
    lease: float = DEFAULT_LEASE
    margin: float = JOB_MARGIN
    reporter: Reporter = log_report
    activities: Mapping[str, str] = field(default_factory=lambda: ACTIVITIES)
    """Tool names to caption keys (`activity.captions()` adds your own)."""
    tries: int = field(default=1, init=False)
    """A turn is tried once; never retried by a queue."""

    @property
    def timeout(self) -> float:
        return self.budget.deadline + self.margin

    async def run(self, turn_id: str) -> Outcome | None:
        """Run the turn if it is still queued; its outcome, or None if someone else has it."""
        fence = await self.store.claim(turn_id, self.lease, self.provider.wire)
        if fence is None:
            logger.info("turn %s is not queued any more; not running it again", turn_id)
            return None
        try:
            async with self._leased(turn_id, fence) as lost:
                return await self._run(turn_id, fence, lost)
        except FenceLost as e:
            logger.warning("%s; the turn is left as its new holder wrote it", e)
            return None

    async def _run(self, turn_id: str, fence: int, lost: asyncio.Event) -> Outcome | None:
        hooks = StoreHooks(self.store, turn_id, fence, self.reporter)
        try:
            async with asyncio.timeout(self.timeout):
                return await self._turn(turn_id, hooks)
        except FenceLost:
            raise
        except asyncio.CancelledError:
            if lost.is_set():
                raise FenceLost(f"turn {turn_id}: the lease was lost; writes refused") from None
            # The process is stopping (or the queue aborted the job): finalise now, not
            # a lease later, so the conversation takes its next question at once.
            await failed(self.store, turn_id, fence=fence, reporter=self.reporter)
            raise
        except Exception as e:  # TimeoutError included: the job clock fired
            logger.exception("turn %s: the job failed: %s", turn_id, e)
        # One failure, one report: the loop has said it already if a hook failed.
        reporter = _quiet if hooks.failure_reported else self.reporter
        await failed(self.store, turn_id, fence=fence, reporter=reporter)
        return Outcome.FAILED

    async def _turn(self, turn_id: str, hooks: StoreHooks) -> Outcome:
        turn = await self.store.turn(turn_id)
        assert turn is not None, "a claimed turn exists"
        history = await self.store.history(turn.conversation_id)
        result = await run_turn(
            turn.question,
            provider=self.provider,
            toolset=self.toolset,
            history=history,
            budget=self.budget,
            hooks=hooks,
            activities=self.activities,
            turn_id=turn_id,
            conversation_id=turn.conversation_id,
            version=turn.version,
            message_offset=turn.message_offset,
        )
        tail = result.history[len(history) + hooks.written :]
        await self.store.finish(turn_id, hooks.fence, tail, result.state, result.usage)
        return result.outcome

    @contextlib.asynccontextmanager
    async def _leased(self, turn_id: str, fence: int) -> AsyncIterator[asyncio.Event]:
        """Renew the lease while the body runs; cancel the body if the lease is lost."""
        lost = asyncio.Event()
        body = asyncio.current_task()
        assert body is not None

        async def renew() -> None:
            while True:
                await asyncio.sleep(self.lease / 3)
                try:
                    renewed = await self.store.renew(turn_id, fence, self.lease)
                except Exception as e:  # a passing store error: try again next tick
                    logger.warning("turn %s: lease renewal failed, will retry: %s", turn_id, e)
                    continue
                if not renewed:
                    logger.warning(
                        "turn %s: lease renewal with fence %d refused: the turn was taken over",
                        turn_id,
                        fence,
                    )
                    lost.set()
                    body.cancel()
                    return

        renewer = asyncio.create_task(renew(), name=f"lease {turn_id}")
        try:
            yield lost
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await renewer
            if lost.is_set():
                body.uncancel()


def _quiet(report: Report) -> None:
    """For a failure the loop already reported."""


async def failed(
    store: Store,
    turn_id: str,
    *,
    fence: int | None = None,
    reporter: Reporter = log_report,
) -> bool:
    """Finalise a turn that could not finish, from its last checkpoint.

    Takes the turn over (from the holder of `fence`, or from an expired lease
    when `fence` is None), closes any tool use left without a result, and
    writes the recovered state as `failed` with `done: true` (`stopped` if its
    cancel had been accepted), the usage as last recorded, and clears the turn's
    keys. False if the turn was not there to take.
    """
    stopped = await store.cancel_requested(turn_id)
    recovery = await store.take_over(turn_id, fence)
    if recovery is None:
        return False
    tail = recovered_tail(recovery)
    final = published.failed(
        recovery.state,
        version=recovery.version + 1,
        usage=recovery.usage,
        message_offset=recovery.message_offset,
        stopped=stopped,
    )
    await store.finish(turn_id, recovery.fence, tail, final, recovery.usage)
    reporter(
        Report(
            turn_id=turn_id,
            iteration=recovery.usage.iterations,
            event=final["status"],
            message="the turn was finalised from its last checkpoint"
            + ("" if fence is not None else " after its worker's lease expired"),
            level=logging.INFO if stopped else logging.ERROR,
            usage=recovery.usage,
            details={"checkpointed": recovery.checkpointed},
        )
    )
    return True


def recovered_tail(recovery: Recovery) -> list[Message]:
    """What the history needs after the last checkpoint to be valid for the next turn.

    Without a checkpoint the question was never stored: it is added. A tool
    use left without results gets `is_error` results saying it was not run.
    """
    if recovery.wire is None:
        return []
    wire = wire_format(recovery.wire)
    if not recovery.checkpointed:
        return [wire.user_message(recovery.question)]
    last = recovery.last_message
    if last is None:
        return []
    unanswered: Sequence[Any] = wire.tool_uses(last)
    return list(
        wire.tool_results(
            [ToolResult(u.id, "not run: the turn failed before the tool finished", True)
             for u in unanswered]
        )
    )  # fmt: skip
