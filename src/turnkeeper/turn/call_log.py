"""The turn's call log: one `ModelCall` record per model call, built once its call is over.

What a record holds comes in as the call goes on: when it starts (its number,
start, timeout, why the turn resumed), what it came to (the reply, the error,
or a stop), what the loop decided of it, and how long the tools it asked for
took. The log gathers these facts for the call in progress and builds the
record from them, complete, when the call is over: when the next call starts
or the turn ends. A checkpoint written before the call's tools have run (a turn
that is to resume after a crash writes one) holds its record as it stood then.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ProviderError
from ..store.records import ModelCall
from ..usage import Usage
from ..wire import Json


@dataclass(slots=True)
class Called:
    """What a model call came to: its reply (priced), its error, or a stop that aborted it.

    A value: nobody changes one once built (the log replaces it whole). Not frozen only
    because one is built per model call and a frozen dataclass's `__init__` costs several
    times more (as `Checkpoint`)."""

    duration: float
    response: Json = None
    error: ProviderError | None = None
    stop_reason: str | None = None
    tools: list[str] | None = None
    usage: Usage | None = None
    model: str | None = None
    stopped: bool = False


@dataclass(slots=True)
class _InProgress:
    """The facts of the call in progress, as they come in: when it started (its number,
    start, timeout, why the turn resumed), then what it came to and what was made of it."""

    iteration: int
    started: float
    """Seconds from the turn's start."""
    timeout: float
    resumed: str | None
    """Why the turn resumed in this job, on its first call (approvals.py)."""
    streamed: bool
    """The provider streams the call's answer text as it arrives."""
    called: Called | None = None
    decision: str | None = None
    caption: str | None = None
    tools_duration: float | None = None
    built: ModelCall | None = None
    """The record as built from these facts (a checkpoint's), until one of them changes."""
    compacted: str | None = None
    """What was compacted just before the call (context.py)."""

    def record(self) -> ModelCall:
        """The record of these facts: built once, unless a fact came in since."""
        if self.built is None:
            self.built = self._build()
        return self.built

    def _build(self) -> ModelCall:
        called = self.called or Called(0.0)
        return ModelCall(
            iteration=self.iteration,
            started=self.started,
            timeout=self.timeout,
            duration=called.duration,
            response=called.response,
            error=None if called.error is None else called.error.describe(),
            stop_reason=called.stop_reason,
            tools=called.tools,
            decision=self.decision,
            caption=self.caption,
            tools_duration=self.tools_duration,
            usage=called.usage,
            model=called.model,
            stopped=called.stopped,
            resumed=self.resumed,
            streamed=self.streamed,
            compacted=self.compacted,
        )


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
        self._current: _InProgress | None = None
        self._compacted: str | None = None
        """What was compacted since the last call began, for the next call's record."""

    @property
    def made(self) -> int:
        """How many model calls this job has made."""
        return len(self.records) + (self._current is not None)

    def began(self, started: float, timeout: float, *, streamed: bool = False) -> int:
        """A call starts `started` seconds into the turn: the previous one is over. Its
        number, counted over the turn."""
        self.close()
        iteration = self.earlier + len(self.records) + 1
        resumed = None if self.records else self.resumed
        self._current = _InProgress(iteration, started, timeout, resumed, streamed)
        if self._compacted is not None:
            self._current.compacted, self._compacted = self._compacted, None
        return iteration

    def compacted(self, what: str) -> None:
        """The request was compacted (`what` says how): the next call's record says so."""
        self._compacted = what if self._compacted is None else f"{self._compacted}; {what}"

    def ended(self, called: Called, decision: str | None = None) -> None:
        """What the call in progress came to (and, for a stop, the decision it makes)."""
        assert self._current is not None, "a call began"
        self._current.called, self._current.decision = called, decision
        self._current.built = None

    def decided(self, decision: str, caption: str | None) -> None:
        """What the loop made of the last call's reply, and the caption it left."""
        assert self._current is not None, "a call was made"
        self._current.decision, self._current.caption = decision, caption
        self._current.built = None

    def tools_took(self, seconds: float) -> None:
        """How long the tools the last call asked for took (none yet when a resumed turn
        answers the tools its last response asked for)."""
        if self._current is not None:
            self._current.tools_duration = seconds
            self._current.built = None

    def unanswered(self, error: ProviderError) -> bool:
        """The turn's deadline passed: a call still in flight (no response, no error) ends
        with `error`; whether there was one."""
        current = self._current
        called = None if current is None else current.called or Called(0.0)
        if (
            current is None
            or called is None
            or called.error is not None
            or called.response is not None
        ):
            return False
        current.called, current.built = replace(called, error=error), None
        return True

    def since(self, written: int) -> list[ModelCall]:
        """The records of the calls from the `written`th on; the one in progress as it
        stands."""
        if self._current is None or written > len(self.records):
            return self.records[written:]
        return [*self.records[written:], self._current.record()]

    def close(self) -> None:
        """The call in progress is over: its record is built."""
        if self._current is not None:
            self.records.append(self._current.record())
            self._current = None
