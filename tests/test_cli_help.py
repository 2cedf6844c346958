"""Every option of every command says what it is, and what it is when not given."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from turnkeeper.cli import build_parser

UNSAID: tuple[object, ...] = (None, False, [], argparse.SUPPRESS)
"""Defaults that need no saying: none, a flag off, a repeatable option not repeated."""


def commands(
    parser: argparse.ArgumentParser, name: str = "turnkeeper"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Each command's parser, by its words (`turnkeeper trace show`), the top one first."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, sub in action.choices.items():
                yield from commands(sub, f"{name} {word}")


def said(default: object) -> str:
    """A default as its help writes it: 30.0 as 30."""
    return format(default, "g") if isinstance(default, float) else str(default)


def arguments() -> Iterator[tuple[str, argparse.Action]]:
    for name, parser in commands(build_parser()):
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                yield f"{name} {'/'.join(action.option_strings) or action.dest}", action


def test_the_walk_sees_every_command_and_the_options_the_issue_named() -> None:
    seen = dict(arguments())
    for expected in (
        "turnkeeper serve --concurrency",
        "turnkeeper worker --concurrency",
        "turnkeeper replay trace",
        "turnkeeper trace show --json",
        "turnkeeper run --max-iterations",
    ):
        assert expected in seen


def test_every_argument_has_help_and_every_default_is_said_in_it() -> None:
    unsaid = []
    for name, action in arguments():
        text = action.help or ""
        if not text.strip():
            unsaid.append(f"{name}: no help")
        elif action.default not in UNSAID and not re.search(
            rf"default:? {re.escape(said(action.default))}(?!\w)", text
        ):
            unsaid.append(f"{name}: help does not say its default {said(action.default)!r}")
    assert unsaid == []
