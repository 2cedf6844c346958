"""The turn lifecycle as a hypothesis state machine, against the real stores.

Random sequences of what happens to turns — claim, a claim that finds the turn
taken, renew, a lease that expires, a sweep, a zombie writing with an old
fence, cancel, a holder writing, finalise (twice) — keeping the invariants:
one terminal state, versions strictly increase, a fenced-out writer changes
nothing, done ⇒ no lease, the history valid.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.scripts import assert_valid_history
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.state import PublishedState
from turnkeeper.store import EXPIRED, UNCLAIMED, FenceLost, Store, held_by, new_token, open_store
from turnkeeper.store.records import Checkpoint
from turnkeeper.turn.lifecycle import fail as failed
from turnkeeper.usage import Usage

T = TypeVar("T")
WIRE = "anthropic"


class Lifecycle(RuleBasedStateMachine):
    """One conversation's turns, one at a time; `store` and `loop` are set per test."""

    store: Store
    loop: asyncio.AbstractEventLoop

    def __init__(self) -> None:
        super().__init__()
        self.conversation_id = self.run(self.store.create_conversation(new_token()[1]))
        self.turn_id = ""
        self.fences: list[int] = []
        """Every fence a claim or take-over handed out for the current turn."""
        self.holder: int | None = None
        self.checkpointed = False
        self.versions: list[int] = []
        self.final: dict[str, Any] | None = None
        self.new_turn()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def state(self) -> dict[str, Any]:
        found = self.run(self.store.state_after(self.turn_id, 0))
        assert found is not None
        return found

    @precondition(lambda self: self.final is not None)
    @rule()
    def new_turn(self) -> None:
        turn = self.run(self.store.create_turn(self.conversation_id, "next question"))
        self.turn_id, self.fences, self.holder = turn.turn_id, [], None
        self.checkpointed, self.versions, self.final = False, [turn.version], None

    @rule()
    def claim(self) -> None:
        was_queued = self.final is None and not self.fences
        fence = self.run(self.store.claim(self.turn_id, 30.0, WIRE))
        assert (fence is not None) == was_queued, "only a queued turn is claimed"
        if fence is not None:
            assert all(fence > f for f in self.fences)
            self.fences.append(fence)
            self.holder = fence

    @rule(lease=st.sampled_from([30.0, -1.0]))
    def renew(self, lease: float) -> None:
        """The holder renews (a negative lease: it has expired)."""
        for fence in self.fences:
            renewed = self.run(self.store.renew(self.turn_id, fence, lease))
            assert renewed == (fence == self.holder and self.final is None)

    @rule()
    def sweep(self) -> None:
        swept = self.run(Sweeper(self.store).sweep())
        if self.turn_id in swept:
            self.holder = None  # taken over, then finalised
            self.finalised()

    @rule()
    def cancel(self) -> None:
        before = self.state()
        self.run(self.store.request_cancel(self.turn_id))
        assert self.state() == before, "a cancel request is a flag, not a write"

    @precondition(lambda self: self.holder is not None)
    @rule(text=st.text(min_size=1, max_size=20))
    def holder_writes(self, text: str) -> None:
        assert self.holder is not None
        current = PublishedState.from_json(self.state())
        checkpoint = Checkpoint(
            turn_id=self.turn_id,
            iteration=1,
            appended=[] if self.checkpointed else [{"role": "user", "content": "next question"}],
            state=current.iterated(activity=None, text=text, usage=Usage()),
            usage=Usage(),
        )
        self.run(self.store.checkpoint(self.turn_id, self.holder, checkpoint))
        self.checkpointed = True

    @precondition(lambda self: self.fences)
    @rule(data=st.data())
    def zombie_writes(self, data: st.DataObject) -> None:
        stale = [f for f in self.fences if f != self.holder or self.final is not None]
        if not stale:
            return
        fence = data.draw(st.sampled_from(stale))
        before = self.state()
        current = PublishedState.from_json(before)
        final = Checkpoint(self.turn_id, 9, [], current.running(), Usage())
        with pytest.raises(FenceLost):
            self.run(self.store.finish(self.turn_id, fence, final))
        with pytest.raises(FenceLost):
            self.run(self.store.publish(self.turn_id, fence, current.running()))
        assert self.state() == before, "a fenced-out writer changes nothing"

    @rule(how=st.sampled_from(["holder", "expired", "unclaimed"]))
    def finalise(self, how: str) -> None:
        """`failed()` by the holder, the sweeper's holder or the API's; twice."""
        holder = {"expired": EXPIRED, "unclaimed": UNCLAIMED}.get(how)
        if holder is None:
            if self.holder is None:
                return
            holder = held_by(self.holder)
        first = self.run(failed(self.store, self.turn_id, holder, reporter=lambda r: None))
        second = self.run(failed(self.store, self.turn_id, holder, reporter=lambda r: None))
        assert not second, "finalised once"
        if first:
            self.holder = None
            self.finalised()

    def finalised(self) -> None:
        assert self.final is None, "one terminal state"
        self.final = self.state()
        assert self.final["done"]
        assert self.final["status"] in ("failed", "stopped")

    @invariant()
    def versions_strictly_increase(self) -> None:
        version = self.state()["version"]
        assert version >= self.versions[-1]
        if version != self.versions[-1]:
            self.versions.append(version)

    @invariant()
    def one_terminal_state(self) -> None:
        state = self.state()
        if self.final is not None:
            assert state == self.final, "a done turn never changes"
        else:
            assert not state["done"]

    @invariant()
    def done_holds_no_lease(self) -> None:
        if self.final is None:
            return
        for fence in self.fences:
            assert not self.run(self.store.renew(self.turn_id, fence, 30.0))
        assert self.turn_id not in self.run(self.store.expired())

    @invariant()
    def history_valid(self) -> None:
        history = self.run(self.store.history(self.conversation_id))
        if history:
            assert_valid_history(history)


def test_the_turn_lifecycle_keeps_its_invariants(own_store_url: str) -> None:
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(open_store(own_store_url))
    machine = type("Machine", (Lifecycle,), {"store": store, "loop": loop})
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=40,
                stateful_step_count=25,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    finally:
        loop.run_until_complete(store.close())
        loop.close()
