"""How a turn ends is one value, built by one function: `ending()` against the contract."""

from __future__ import annotations

import logging

import pytest

from turnkeeper import Outcome, Status, Usage
from turnkeeper.outcomes import Ending, ending, unfinished
from turnkeeper.state import queued

# outcome: (message key, has_error, stopped, reported at) as docs/design.md §3 and §5 have it
CONTRACT: dict[str, tuple[str | None, bool, bool, int | None]] = {
    "finished": (None, False, False, None),
    "truncated": ("errors.ai_truncated", True, False, logging.WARNING),
    "refused": ("errors.ai_refused", False, False, logging.INFO),
    "context_exceeded": ("errors.ai_context_full", True, False, logging.ERROR),
    "iteration_limit": ("errors.ai_iteration_limit", True, False, logging.WARNING),
    "time_limit": ("errors.ai_time_limit", True, False, logging.WARNING),
    "stopped": ("notices.stopped", False, True, None),
    "failed": ("errors.ai_failed", True, False, logging.ERROR),
    "limit_reached": ("notices.limit_reached", False, False, logging.INFO),
}


def test_the_statuses_are_the_three_before_an_ending_and_the_nine_endings() -> None:
    assert [s.value for s in Status] == ["queued", "running", "waiting"]
    assert [o.value for o in Outcome] == list(CONTRACT)


@pytest.mark.parametrize("outcome", list(Outcome))
def test_each_outcome_ends_as_the_contract_says(outcome: Outcome) -> None:
    key, has_error, stopped, level = CONTRACT[outcome.value]
    end = ending(outcome)
    assert end == Ending(outcome, key, has_error, stopped, level, end.why)
    assert (end.why != "") == (level is not None), "a reported ending says what happened"


@pytest.mark.parametrize("outcome", list(Outcome))
def test_the_published_state_shows_the_ending(outcome: Outcome) -> None:
    key, has_error, stopped, _ = CONTRACT[outcome.value]
    state = queued("t_1", "c_1", "q").running().ended(ending(outcome), text=None, usage=Usage())
    assert (state.status, state.done, state.stopped, state.has_error) == (
        outcome,
        True,
        stopped,
        has_error,
    )
    notices = [m for m in state.messages if m.key is not None]
    assert [m.key for m in notices] == ([key] if key else [])
    # a refusal is not an error of the turn, but its bubble is shown as one; a stop is neither
    assert all(m.is_error == (outcome is not Outcome.STOPPED) for m in notices)


def test_a_failure_shows_its_errors_key() -> None:
    end = ending(Outcome.FAILED, "errors.ai_unavailable")
    assert (end.key, end.has_error, end.level) == ("errors.ai_unavailable", True, logging.ERROR)


def test_a_turn_that_could_not_finish_is_stopped_only_if_the_reader_asked() -> None:
    assert unfinished(True) == ending(Outcome.STOPPED)
    assert unfinished(False) == ending(Outcome.FAILED)
