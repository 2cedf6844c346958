"""The turn's call log: one `ModelCall` record per model call, filled in as the call goes on.

What a record holds comes in as the call goes on: when it starts (its number,
start, timeout, why the turn resumed), what it came to (the reply, the error,
or a stop), what the loop decided of it, and how long the tools it asked for
took. The log fills the call's record in as these facts come in; it is over
when the next call starts or the turn ends. A record handed to a write before
the call is over (each iteration's checkpoint) is never changed after: a fact
that comes in later goes into a copy, so a checkpoint written before the call's
tools have run (a turn that is to resume after a crash writes one) holds the
record as it stood then.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ProviderError
from ..store.records import ModelCall
from ..usage import Usage
from ..wire import Json


class CallLog:
    """The model calls of a turn's job, in order: records of those over, and the facts of
    the one in progress."""

    def __init__(self, earlier: int = 0, resumed: str | None = None) -> None:
        self.earlier = earlier
        """Model calls the turn made in earlier jobs (a resumed turn numbers on from them)."""
        self.resumed = resumed
        """Why the turn resumed in this job (approvals.py), recorded on its first call."""
        self.records: list[ModelCall] = []
        """The records of the calls over, in order."""
        self._current: ModelCall | None = None
        """The record of the call in progress, filled in as its facts come in."""
        self._handed = False
        """That record was handed to a write as it stood: a fact that comes in after it goes
        into a copy (the one handed out never changes)."""
        self._compacted: str | None = None
        """What was compacted since the last call began, for the next call's record."""

    @property
    def made(self) -> int:
        """How many model calls this job has made."""
        return len(self.records) + (self._current is not None)

    def began(self, started: float, timeout: float, *, streamed: bool = False) -> int:
        """A call starts `started` seconds into the turn: the previous one is over. Its
        number, counted over the turn."""
        if self._current is not None:  # `close()`, written out: once per call
            self.records.append(self._current)
        iteration = self.earlier + len(self.records) + 1
        resumed = None if self.records else self.resumed
        compacted, self._compacted, self._handed = self._compacted, None, False
        self._current = ModelCall(
            iteration, started, timeout, resumed=resumed, streamed=streamed, compacted=compacted
        )
        return iteration

    def compacted(self, what: str) -> None:
        """The request was compacted (`what` says how): the next call's record says so."""
        self._compacted = what if self._compacted is None else f"{self._compacted}; {what}"

    def _draft(self) -> ModelCall:
        """The record in progress, to fill in: a copy if it was handed out as it stood."""
        assert self._current is not None, "a call began"
        if self._handed:
            self._current, self._handed = replace(self._current), False
        return self._current

    def ended(
        self,
        duration: float,
        response: Json = None,
        error: ProviderError | None = None,
        stop_reason: str | None = None,
        tools: list[str] | None = None,
        usage: Usage | None = None,
        model: str | None = None,
        *,
        stopped: bool = False,
        decision: str | None = None,
    ) -> None:
        """What the call in progress came to after `duration` seconds: its reply (priced
        `usage`, the `model` that answered), its `error`, or a stop that aborted it (and, for
        a stop, the `decision` it makes). Written into the record as it comes: no value of
        its own per call."""
        call = self._current
        if call is None or self._handed:  # `_draft`'s work, only when there is some
            call = self._draft()
        call.duration, call.response, call.usage = duration, response, usage
        call.stop_reason, call.tools, call.model = stop_reason, tools, model
        call.stopped, call.decision = stopped, decision
        call.error = None if error is None else error.describe()

    def decided(self, decision: str, caption: str | None) -> None:
        """What the loop made of the last call's reply, and the caption it left."""
        call = self._current
        if call is None or self._handed:
            call = self._draft()
        call.decision, call.caption = decision, caption

    def ran(self, caption: str | None) -> None:
        """The tools the last call asked for ran, leaving `caption`: the call's own, since
        a caption is published only once its tool has run (activity.py)."""
        if self._current is not None:
            (self._draft() if self._handed else self._current).caption = caption

    def tools_took(self, seconds: float) -> None:
        """How long the tools the last call asked for took (none yet when a resumed turn
        answers the tools its last response asked for)."""
        call = self._current
        if call is not None:
            if self._handed:
                call = self._draft()
            call.tools_duration = seconds

    def unanswered(self, error: ProviderError) -> bool:
        """The turn's deadline passed: a call still in flight (no response, no error) ends
        with `error`; whether there was one."""
        current = self._current
        if current is None or current.error is not None or current.response is not None:
            return False
        self._draft().error = error.describe()
        return True

    def since(self, written: int) -> list[ModelCall]:
        """The records of the calls from the `written`th on; the one in progress as it
        stands (handed out: what comes in after it goes into a copy)."""
        if self._current is None or written > len(self.records):
            return self.records[written:]
        self._handed = True
        return [*self.records[written:], self._current]

    def close(self) -> None:
        """The call in progress is over: its record, as it stands, joins the records."""
        if self._current is not None:
            self.records.append(self._current)
            self._current = None
