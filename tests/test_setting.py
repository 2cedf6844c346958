"""What the job knows of a turn, as one value (turn/setting.py): the ids travel there only."""

from __future__ import annotations

import pytest

from turnkeeper import ConfigError, ScriptedProvider, TurnSetting, run_turn
from turnkeeper.state import queued


def test_a_start_state_of_another_turn_is_refused() -> None:
    start = queued("t_1", "c_1", "q")
    assert TurnSetting(turn_id="t_1", conversation_id="c_1", start=start).first("q") is start
    with pytest.raises(ConfigError, match="turn t_1 of conversation c_1, not t_2 of c_1"):
        TurnSetting(turn_id="t_2", conversation_id="c_1", start=start)


async def test_the_turns_state_and_its_tools_context_carry_the_settings_ids() -> None:
    setting = TurnSetting(turn_id="t_7", conversation_id="c_7", user="ada", locale="fr")
    assert setting.context.user == "ada"
    assert (setting.context.turn_id, setting.context.conversation_id) == ("t_7", "c_7")
    result = await run_turn("q", provider=ScriptedProvider([]), setting=setting)
    assert (result.state.turn_id, result.state.conversation_id) == ("t_7", "c_7")
    assert result.state.version == 2, "a local turn starts from version 0, never published"
