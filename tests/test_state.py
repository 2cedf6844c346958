"""The published state's typed fields survive the JSON the store keeps and the API serves."""

from __future__ import annotations

import pytest

from turnkeeper import Outcome, Status, Usage
from turnkeeper.outcomes import ending
from turnkeeper.state import Bubble, PublishedState, queued


def test_a_state_read_back_from_its_json_is_the_same_state() -> None:
    running = queued("t_1", "c_1", "q").running()
    done = running.iterated("activity.read_file", "reading", Usage(1, 10, 2)).ended(
        ending(Outcome.TRUNCATED), text=None, usage=Usage(2, 30, 5, cost_usd=0.01)
    )
    for state in (running, done):
        again = PublishedState.from_json(state.to_json())
        assert again == state
    assert PublishedState.from_json(running.to_json()).status is Status.RUNNING
    assert PublishedState.from_json(done.to_json()).status is Outcome.TRUNCATED
    assert done.to_json()["usage"] == {**Usage(2, 30, 5).as_dict(), "cost_usd": 0.01}


def test_a_published_usage_does_not_move_with_the_turns() -> None:
    usage = Usage(1, 10, 2)
    state = queued("t_1", "c_1", "q").iterated(None, None, usage)
    usage.add(Usage(1, 5, 5))
    assert state.usage == Usage(1, 10, 2)


def test_a_bubble_of_no_known_role_is_refused() -> None:
    with pytest.raises(ValueError, match="not a role"):
        Bubble.from_json({"id": "m1", "role": "system", "text": "hi"})
