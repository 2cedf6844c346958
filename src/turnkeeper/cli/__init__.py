"""The command line: `demo`, `run`, `replay`, `trace`, `serve`, `worker`, `usage`,
`conversations`, `feedback`, `messages`.

Exit codes: 0 when the command did its work (for `run` and `demo`: the turn
finished), 1 when a replay differs from its trace or a turn failed or hit a cap,
2 with a one-line error for unusable arguments or input, 3 when the model gave no
full answer (`run.EXIT_CODES`).

The top floor: may import every other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..credentials import redact_text
from ..errors import ConfigError
from .manage import add_commands, cmd_conversations, cmd_feedback
from .messages import add_messages_command, cmd_messages
from .options import _Parser, add_price_option, directory
from .run import _add_run_command, cmd_demo, cmd_run
from .serving import _add_serving_commands, cmd_serve, cmd_worker
from .traces import cmd_replay, cmd_trace
from .usage import add_usage_command, cmd_usage

DESCRIPTION = (
    "turnkeeper runs LLM agent turns the way production needs them run: one turn from "
    "the command line (demo, run, replay, trace), or a chat and its HTTP API with queued "
    "turns (serve, worker)."
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="turnkeeper", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"turnkeeper {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    commands.add_parser("demo", help="run the todo-list demo turn offline")
    _add_run_command(commands)

    rep = commands.add_parser("replay", help="re-run a traced turn offline and compare")
    rep.add_argument("trace", type=Path, metavar="TRACE", help="a trace file (run --trace OUT)")

    trace = commands.add_parser("trace", help="read traces")
    trace_commands = trace.add_subparsers(dest="trace_command", required=True, parser_class=_Parser)
    show = trace_commands.add_parser("show", help="one row per model call, and totals")
    show.add_argument("trace", metavar="TRACE_OR_TURN_ID", help="a trace file, or a stored turn")
    show.add_argument(
        "--json", action="store_true", help="print the rows as JSON (default: a table)"
    )
    show.add_argument(
        "--database", metavar="URL", help="the store of TURN_ID (env TURNKEEPER_DATABASE_URL)"
    )
    show.add_argument(
        "--app",
        metavar="APP",
        help="the turn's assistant (module:attribute, as serve takes it): its captions",
    )
    show.add_argument(
        "--app-dir", type=directory, metavar="DIR", help="import APP from this folder"
    )
    add_price_option(show)
    _add_serving_commands(commands)
    add_usage_command(commands)
    add_commands(commands)
    add_messages_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ConfigError as e:
        print(f"turnkeeper: error: {redact_text(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("turnkeeper: interrupted", file=sys.stderr)
        return 130


COMMANDS = {
    "demo": cmd_demo,
    "run": cmd_run,
    "replay": cmd_replay,
    "trace": cmd_trace,
    "serve": cmd_serve,
    "worker": cmd_worker,
    "usage": cmd_usage,
    "conversations": cmd_conversations,
    "feedback": cmd_feedback,
    "messages": cmd_messages,
}
