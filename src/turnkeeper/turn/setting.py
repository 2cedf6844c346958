"""What the job knows of the turn it runs: its ids, where it starts, who asked, how it resumes.

`run_turn` takes the question, the provider, the tools, and one `TurnSetting`
for the rest of what a job knows: the turn's and the conversation's ids (they
travel here, and only here: the loop names its state with them and makes them
the tools' `ToolContext`), the state last published (the store's `queued`
state), the user and locale the turn was asked with, where a resumed turn goes
on (approvals.py), the captions to show and the clock to read. A turn run as
a library call needs none of it: `TurnSetting()` is a local turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..budget import Clock, monotonic
from ..errors import ConfigError
from ..state import PublishedState, queued
from ..store.records import Compacted
from ..tools.context import ToolContext
from .activity import ACTIVITIES
from .approvals import Resume
from .compaction import DEFAULT, Compaction


@dataclass(frozen=True, slots=True)
class TurnSetting:
    """What a job knows of the turn it runs (default: a local turn that published nothing).

    `start` is the turn's state as last published (the store's `queued` state, with the
    user's bubble); its ids must be `turn_id` and `conversation_id`. `user` and `locale` are
    what the tools that ask for a `ToolContext` get. `resume`: which tools wait for
    approval, and where a resumed turn goes on (approvals.py). `activities`: the captions
    of what the turn is doing (activity.py). `clock`: what the turn reads the time from
    (a replay gives back the recorded readings). `compaction`: how the requests are kept
    inside the model's context window (context.py; None: not at all). `compacted`: the
    conversation's compaction record its requests are built from."""

    turn_id: str = "t_local"
    conversation_id: str = "c_local"
    start: PublishedState | None = None
    user: str | None = None
    locale: str = "en"
    resume: Resume = field(default_factory=Resume)
    activities: Mapping[str, str] = field(default_factory=lambda: ACTIVITIES)
    clock: Clock = monotonic
    compaction: Compaction | None = DEFAULT
    compacted: Compacted | None = None
    """The conversation's compaction record as the store holds it (context.py): the turn's
    requests are built from it."""

    def __post_init__(self) -> None:
        start = self.start
        if start is not None and (start.turn_id, start.conversation_id) != self.ids:
            raise ConfigError(
                f"the start state is turn {start.turn_id} of conversation"
                f" {start.conversation_id}, not {self.turn_id} of {self.conversation_id}"
            )

    @property
    def ids(self) -> tuple[str, str]:
        """The turn's id and its conversation's."""
        return self.turn_id, self.conversation_id

    @property
    def context(self) -> ToolContext:
        """What the turn's tools are told of it."""
        return ToolContext(self.user, self.locale, self.conversation_id, self.turn_id)

    def first(self, question: str) -> PublishedState:
        """The state the turn starts from: `start`, or, without one, a state that nothing
        of the turn has been published in (version 0)."""
        return self.start or queued(self.turn_id, self.conversation_id, question, version=0)
