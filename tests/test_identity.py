"""An assistant's identity is the same in every process that loads it (issue 44.1).

Its version is a hash of what can be compared without running code: an `instructions`
function is named by its module and qualified name (and its code), never by its `repr`,
whose memory address differs in every process; `Assistant(version=...)` pins it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnkeeper.assistant import Assistant
from turnkeeper.errors import ConfigError
from turnkeeper.service.ownership import queue_of

SRC = Path(__file__).resolve().parent.parent / "src"
APP = '''
from turnkeeper import Assistant

def instructions(ctx):
    return "You help " + (ctx.user or "everyone") + "."

def look_up(order: str) -> str:
    """Look an order up."""
    return "order " + order + " ships {when}"

assistant = Assistant(name="Bakery", instructions=instructions, tools=[look_up])
print(assistant.owner.version, repr(instructions))
'''


def version_in_a_process(folder: Path, when: str = "today") -> tuple[str, str]:
    (folder / "bakery.py").write_text(APP.replace("{when}", when))
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{SRC}", "PYTHONHASHSEED": "random"}
    out = subprocess.run(
        [sys.executable, "-c", "import bakery"], env=env, capture_output=True, text=True,
        check=True,
    ).stdout.split(maxsplit=1)  # fmt: skip
    return out[0], out[1]


def test_the_version_is_the_same_in_two_processes(tmp_path: Path) -> None:
    first, repr_first = version_in_a_process(tmp_path)
    second, repr_second = version_in_a_process(tmp_path)
    assert repr_first != repr_second, "the function's repr differs: it holds its address"
    assert first == second
    assert len(first) == 12


def test_a_tool_whose_body_changed_is_another_version(tmp_path: Path) -> None:
    today, _ = version_in_a_process(tmp_path, "today")
    tomorrow, _ = version_in_a_process(tmp_path, "tomorrow")
    assert today != tomorrow


def test_an_instructions_function_is_named_not_printed() -> None:
    def told(ctx: object) -> str:
        return "Be brief."

    def other(ctx: object) -> str:
        return "Be brief."

    assert Assistant(instructions=told).owner == Assistant(instructions=told).owner
    assert Assistant(instructions=told).owner != Assistant(instructions=other).owner


def test_version_pins_it() -> None:
    pinned = Assistant(name="Bakery", instructions="Sell bread.", version="2026-12-07.1")
    assert pinned.owner.version == "2026-12-07.1"
    moved = Assistant(name="Bakery", instructions="Sell cake.", version="2026-12-07.1")
    assert moved.owner == pinned.owner
    assert Assistant(name="Bakery").owner.version != "2026-12-07.1"


def test_the_queue_is_named_by_the_assistants_name_not_its_version() -> None:
    one = Assistant(name="Bakery", instructions="Sell bread.")
    two = Assistant(name="Bakery", instructions="Sell cake.")
    assert one.owner.version != two.owner.version
    assert queue_of(one.owner) == queue_of(two.owner)
    assert queue_of(one.owner) != queue_of(Assistant(name="Florist").owner)
    assert queue_of(one.owner).startswith("turnkeeper_turns.")


@pytest.mark.parametrize("version", ["", " 1.0", "x" * 65, "a\nb", 3, b"1.0", ["1"]])
def test_a_version_that_is_not_a_short_string_is_a_config_error(version: object) -> None:
    with pytest.raises(ConfigError, match="version must be a short string"):
        Assistant(version=version)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["unclaimed_after", "unclaimed_timeout"])
@pytest.mark.parametrize("value", [0, -1, True, "60"])
def test_unclaimed_settings_are_positive_seconds(name: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"{name} must be a positive number of seconds"):
        Assistant(**{name: value})  # type: ignore[arg-type]
