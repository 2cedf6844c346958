"""The sweeper: finalises turns whose worker stopped renewing its lease.

A worker that is killed, crashes or hangs stops renewing; once its lease has
expired the sweeper takes the turn over (bumping its fence) and finalises it
through `failed()`, from the last checkpoint. It never runs a turn again. It
runs in the serving process and in every worker; two sweepers racing for one
turn are safe, the take-over is atomic.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from .job import failed
from .report import Reporter, log_report
from .store import EXPIRED, Store

if TYPE_CHECKING:  # prometheus-client comes with the server and postgres extras
    from .metrics import Metrics

logger = logging.getLogger("turnkeeper.sweeper")

DEFAULT_INTERVAL = 5.0


class Sweeper:
    def __init__(
        self,
        store: Store,
        *,
        interval: float = DEFAULT_INTERVAL,
        reporter: Reporter = log_report,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.interval = interval
        self.reporter = reporter
        self.metrics = metrics

    async def sweep(self) -> list[str]:
        """Finalise every turn whose lease has expired; the ids finalised here."""
        swept = []
        for turn_id in await self.store.expired():
            if await failed(self.store, turn_id, EXPIRED, reporter=self.reporter):
                logger.warning("turn %s: its worker's lease expired; finalised as failed", turn_id)
                swept.append(turn_id)
                if self.metrics is not None:
                    self.metrics.swept.inc()
        return swept

    async def run(self) -> None:
        """Sweep every `interval` seconds until cancelled; a failed sweep is logged and retried."""
        while True:
            try:
                await self.sweep()
            except Exception:
                logger.exception("the sweep failed; trying again in %.1f s", self.interval)
            await asyncio.sleep(self.interval)
