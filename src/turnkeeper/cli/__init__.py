"""The command line: `demo`, `run`, `replay`, `trace`, `serve`, `worker`.

Exit codes: 0 when the command did its work (whatever the turn's outcome), 1
when a replay differs from its trace, 2 with a one-line error for unusable
arguments or input.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__, gc_policy, i18n, logs, prices, timeline
from .assistant import Assistant, demo_assistant, load
from .budget import DEFAULT_DEADLINE, DEFAULT_MAX_ITERATIONS, Budget
from .cards import Card
from .credentials import redact_logs, redact_text, redact_url
from .errors import ConfigError, MissingExtra
from .hooks import LocalHooks
from .liveline import LiveHooks, LiveLine
from .logs import FORMATS
from .loop import TurnResult, run_turn
from .providers import Provider
from .providers.demo import DemoProvider
from .providers.scripted import ScriptedProvider
from .providers.select import NAMES, ModelSettings, choose_provider
from .replay import first_difference, replay
from .report import Report
from .tools import CombinedToolset, Toolset
from .tools.files import DEMO_ROOT, read_file_tool
from .tools.functions import FunctionToolset
from .trace import read_trace, write_trace

DEMO_QUESTION = "what's on my todo list?"
DESCRIPTION = (
    "turnkeeper runs LLM agent turns the way production needs them run: one turn from "
    "the command line (demo, run, replay, trace), or a chat and its HTTP API with queued "
    "turns (serve, worker)."
)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def seconds(text: str) -> float:
    """A duration: a positive decimal number of seconds."""
    if not re.fullmatch(r"\d+(\.\d*)?|\.\d+", text.strip()) or float(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return float(text)


def positive_int(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def directory(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return path


def _add_run_command(commands: Any) -> None:
    run = commands.add_parser("run", help="run one turn and print it")
    run.add_argument("question", help="what to ask")
    model = run.add_mutually_exclusive_group()
    model.add_argument(
        "--script",
        type=Path,
        metavar="FILE",
        help="a JSON array of Messages API response bodies (examples/responses.json)",
    )
    model.add_argument(
        "--provider", choices=NAMES, help="a real model (keys from the environment; no default)"
    )
    run.add_argument(
        "--model", help="the model name, with --provider (default: the provider's own)"
    )
    add_prompt_cache_option(run)
    run.add_argument(
        "--root",
        type=directory,
        default=Path("."),
        metavar="DIR",
        help="the folder read_file may read (default: .)",
    )
    run.add_argument(
        "--max-iterations",
        type=positive_int,
        default=DEFAULT_MAX_ITERATIONS,
        metavar="N",
        help=f"model calls at most (default: {DEFAULT_MAX_ITERATIONS})",
    )
    run.add_argument(
        "--deadline",
        type=seconds,
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help=f"seconds the turn may take (default: {DEFAULT_DEADLINE:g})",
    )
    run.add_argument("--json", action="store_true", help="print the final published state")
    run.add_argument("--trace", type=Path, metavar="OUT", help="write the turn's trace here")
    add_price_option(run)
    add_mcp_options(run)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="turnkeeper", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"turnkeeper {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    commands.add_parser("demo", help="run the todo-list demo turn offline")
    _add_run_command(commands)

    rep = commands.add_parser("replay", help="re-run a traced turn offline and compare")
    rep.add_argument("trace", type=Path)

    trace = commands.add_parser("trace", help="read traces")
    trace_commands = trace.add_subparsers(dest="trace_command", required=True, parser_class=_Parser)
    show = trace_commands.add_parser("show", help="one row per model call, and totals")
    show.add_argument("trace", metavar="TRACE_OR_TURN_ID", help="a trace file, or a stored turn")
    show.add_argument("--json", action="store_true")
    show.add_argument(
        "--database", metavar="URL", help="the store of TURN_ID (env TURNKEEPER_DATABASE_URL)"
    )
    add_price_option(show)
    _add_serving_commands(commands)
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


def cmd_demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="turnkeeper-demo-") as root:
        Path(root, "todo.txt").write_text("write tests", encoding="utf-8")
        result = _run(DEMO_QUESTION, DemoProvider(), root, Budget())
    print(result.state.messages[-1].text or "")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise ConfigError("the question is empty")
    provider = _run_provider(args)
    use_prices(args)
    if args.trace is not None:
        _check_writable(args.trace)
    budget = Budget(max_iterations=args.max_iterations, deadline=args.deadline)
    locale = i18n.locale_from_env(os.environ)
    line = LiveLine(sys.stdout, locale) if sys.stdout.isatty() and not args.json else None
    result = _run(args.question, provider, args.root, budget, mcp_servers(args), line)
    if args.trace is not None:
        write_trace(result.trace, args.trace)
    if isinstance(provider, ScriptedProvider) and provider.unused:
        unused = i18n.counted(provider.unused, "scripted response")
        print(f"turnkeeper: note: {unused} unused", file=sys.stderr)
    if args.json:
        print(json.dumps(result.state.to_json(), ensure_ascii=False))
    else:
        print(transcript(result.state.to_json()["messages"], locale))
    if line is not None:
        print(line.outcome(result.state.status))
    return 0


def _run_provider(args: argparse.Namespace) -> Provider:
    """The model `run` asks: a script, or a provider chosen with --provider and --model."""
    if args.script is not None:
        if args.model is not None:
            raise ConfigError("--model goes with --provider, not --script")
        return ScriptedProvider.from_file(args.script)
    if args.provider is None:
        raise ConfigError("say which model answers: --script FILE or --provider NAME")
    settings = ModelSettings(prompt_cache=not args.no_prompt_cache)
    with _missing_sdk_too():
        return choose_provider(args.provider, args.model, os.environ, settings=settings)


SDKS = {"ANTHROPIC_API_KEY": "anthropic", "OPENAI_API_KEY": "openai"}
"""The SDK, and the extra that installs it, of the provider each key is for."""


@contextlib.contextmanager
def _missing_sdk_too() -> Iterator[None]:
    """A missing key is said together with a missing SDK: one answer for both."""
    try:
        yield
    except MissingExtra:
        raise
    except ConfigError as e:
        sdk = next((sdk for key, sdk in SDKS.items() if str(e).startswith(key)), None)
        if sdk is None or _installed(sdk):
            raise
        raise ConfigError(
            f"{e}; and install the {sdk} extra: pip install -e '.[{sdk}]' in turnkeeper's checkout"
        ) from None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def _run(
    question: str,
    provider: Provider,
    root: str | Path,
    budget: Budget,
    servers: Sequence[Toolset] = (),
    line: LiveLine | None = None,
) -> TurnResult:
    return asyncio.run(_turn(question, provider, root, budget, servers, line))


async def _turn(
    question: str,
    provider: Provider,
    root: str | Path,
    budget: Budget,
    servers: Sequence[Toolset],
    line: LiveLine | None = None,
) -> TurnResult:
    """One turn with `read_file` and the MCP servers' tools, connected for the turn's length;
    the provider's connections are closed after it (SDK clients hold a pool). With a live
    line, it shows what just happened while the turn runs."""
    hooks = LocalHooks(reporter=_stderr_report) if line is None else LiveHooks(line, _stderr_report)
    shown = contextlib.nullcontext() if line is None else line.ticking()
    try:
        async with (
            shown,
            CombinedToolset(FunctionToolset([read_file_tool(root)]), *servers) as toolset,
        ):
            return await run_turn(
                question, provider=provider, toolset=toolset, budget=budget, hooks=hooks
            )
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()


def add_mcp_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mcp-stdio",
        action="append",
        default=[],
        metavar="COMMAND",
        help="start an MCP server with this command and offer its tools (repeatable)",
    )
    parser.add_argument(
        "--mcp-http",
        action="append",
        default=[],
        metavar="URL",
        help="offer the tools of the MCP server at this streamable HTTP URL (repeatable)",
    )


def mcp_servers(args: argparse.Namespace) -> list[Toolset]:
    """The MCP servers named by `--mcp-stdio` and `--mcp-http`; the SDK is imported only if any."""
    if not (args.mcp_stdio or args.mcp_http):
        return []
    from .tools.mcp import toolsets_from

    return list(toolsets_from(args.mcp_stdio, args.mcp_http))


def _stderr_report(report: Report) -> None:
    """The CLI's reporter: one line on stderr per report (the logger would repeat it)."""
    print(f"turnkeeper: {report.event}: {redact_text(report.message)}", file=sys.stderr)


def _check_writable(path: Path) -> None:
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as e:
        raise ConfigError(f"cannot write trace {path}: {e.strerror}") from e


def transcript(messages: Sequence[dict[str, Any]], locale: str) -> str:
    """The conversation as a person reads it, notices resolved in `locale`, a card as its
    plain text (`Card.as_text()`)."""
    you, bot = i18n.resolve("ui.you", locale), i18n.resolve("ui.bot", locale)
    lines = []
    for m in messages:
        text = m.get("text")
        if m.get("card") is not None:
            text = Card.from_json(m["card"]).as_text()
        elif text is None:
            text = i18n.resolve(str(m.get("key")), locale)
        if text is not None:
            lines.append(f"{you if m.get('role') == 'user' else bot}: {text}")
    return "\n".join(lines)


def cmd_replay(args: argparse.Namespace) -> int:
    recorded = read_trace(args.trace)
    replayed = asyncio.run(replay(recorded)).trace
    difference = first_difference(recorded, replayed)
    if difference is not None:
        print(f"replay differs: {difference}")
        return 1
    print(f"replay matches: {len(recorded.calls)} model calls, outcome {recorded.outcome.value}")
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    use_prices(args)
    if Path(args.trace).exists() and args.database is None:
        trace = read_trace(args.trace)
        rows = timeline.rows(trace.calls, trace.wire)
        outcome: str | None = trace.outcome.value
    else:
        url = _stored_turn_url(args.trace, args.database)
        rows, outcome = asyncio.run(_stored_timeline(args.trace, url))
    if args.json:
        print(json.dumps({"iterations": rows, "totals": timeline.totals(rows)}, ensure_ascii=False))
    else:
        print(timeline.render(captioned(rows, i18n.locale_from_env(os.environ)), outcome))
    return 0


def captioned(rows: Sequence[dict[str, Any]], locale: str) -> list[dict[str, Any]]:
    """The rows with each activity caption key resolved in `locale`; a key the process's
    catalogs lack (an application's own caption) stays as it is."""
    return [
        {**r, "activity": r["activity"] and (i18n.resolve(r["activity"], locale) or r["activity"])}
        for r in rows
    ]


def _stored_turn_url(turn_id: str, database: str | None) -> str:
    """The URL of the store that holds `turn_id`: --database, else the environment's, else
    the default; `ConfigError` if `turn_id` is no turn id, or the SQLite file is missing
    (opening it would create it: reading a turn never makes a database)."""
    from .store import DEFAULT_URL, parse_url

    url = database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
    if not re.fullmatch(r"t_[0-9a-f]+", turn_id):
        raise ConfigError(f"{turn_id!r} is neither a trace file nor a turn id")
    parsed = parse_url(url)
    if parsed.scheme == "sqlite" and not Path(parsed.target).is_file():
        raise ConfigError(f"there is no SQLite database at {parsed.target}")
    return url


async def _readable(store: Any, url: str) -> None:
    """`ConfigError` unless the store at `url` holds turnkeeper's tables, all migrated."""
    pending = await store.pending()
    if pending is None:
        raise ConfigError(f"there is no turnkeeper store at {redact_url(url)}")
    if pending:
        raise ConfigError(
            f"the store at {redact_url(url)} is older than this turnkeeper ({pending} "
            "migrations behind); `turnkeeper serve` or `worker` on it migrates it"
        )


async def _stored_timeline(turn_id: str, url: str) -> tuple[list[Any], str | None]:
    """The timeline of a turn the store at `url` holds."""
    from .store import open_store

    store = await open_store(url, read_only=True)  # reading a turn changes no database
    try:
        await _readable(store, url)
        turn = await store.turn(turn_id)
        if turn is None:
            raise ConfigError(f"the store at {redact_url(url)} has no turn {turn_id}")
        records = await store.iterations(turn_id)
        state = await store.state_after(turn_id, 0)
    finally:
        await store.close()
    outcome = state.get("status") if state is not None else None
    return timeline.stored_rows(records), outcome


# ---- serve and worker ------------------------------------------------------------


APP_HELP = (
    "your assistant: a turnkeeper.Assistant as module:attribute, imported from the current "
    "folder (or --app-dir); without it, the demo assistant"
)


def _add_serving_commands(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve the chat and its HTTP API (and run turns)")
    _serving_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    serve.add_argument("--port", type=port, default=8000, help="default 8000")
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="only queue turns, for `turnkeeper worker` processes (PostgreSQL)",
    )
    serve.add_argument(
        "--cors-origin",
        type=origin,
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of this origin (https://example.com) call the API (repeatable)",
    )
    serve.add_argument(
        "--frame-ancestors",
        type=origin,
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of this origin frame the chat (repeatable; default: only its own)",
    )
    _metrics_options(serve)
    serve.add_argument(
        "--public-metrics",
        action="store_true",
        help="answer /metrics on the public port too (no token needed)",
    )
    worker = commands.add_parser("worker", help="run queued turns from PostgreSQL")
    _serving_options(worker)
    _metrics_options(worker)


def _metrics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=port,
        metavar="PORT",
        help="serve /metrics on this port, all interfaces (default: none)",
    )


def _serving_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("app", nargs="?", metavar="APP", help=APP_HELP)
    parser.add_argument(
        "--app-dir", type=directory, metavar="DIR", help="import APP from this folder"
    )
    parser.add_argument(
        "--database",
        metavar="URL",
        help="sqlite:///path.db or postgresql://user@host:port/db "
        "(env TURNKEEPER_DATABASE_URL; default sqlite:///turnkeeper.db)",
    )
    parser.add_argument(
        "--provider", choices=["anthropic", "openai", "demo"], help="env TURNKEEPER_PROVIDER"
    )
    parser.add_argument("--model", help="env TURNKEEPER_MODEL")
    add_prompt_cache_option(parser)
    parser.add_argument(
        "--resume-after-crash",
        action="store_true",
        help="a turn whose worker died resumes from its last checkpoint instead of failing",
    )
    parser.add_argument(
        "--root",
        type=directory,
        help="the folder the demo assistant's read_file reads (default: turnkeeper's demo folder)",
    )
    add_mcp_options(parser)
    parser.add_argument("--concurrency", type=positive_int, default=4, help="turns at once")
    parser.add_argument(
        "--lease", type=seconds, default=30.0, help="seconds a turn's lease lasts (default 30)"
    )
    parser.add_argument(
        "--grace",
        type=seconds,
        default=10.0,
        help="on SIGINT or SIGTERM, seconds running turns get to finish (default 10)",
    )
    parser.add_argument(
        "--log-format", choices=FORMATS, default="text", help="text lines or JSON lines"
    )
    add_price_option(parser)


def add_price_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="JSON of model prices in USD per million tokens (env TURNKEEPER_PRICES)",
    )


def add_prompt_cache_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="send no prompt-cache marks to Anthropic (on by default: repeats cost a tenth)",
    )


def use_prices(args: argparse.Namespace) -> None:
    """The price table of `--prices FILE`, else of `TURNKEEPER_PRICES`, on the shipped one."""
    prices.use(prices.load(getattr(args, "prices", None), os.environ))


def port(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number")
    return int(text)


def origin(text: str) -> str:
    """A web origin as browsers send it: scheme://host[:port], no path, no trailing slash."""
    if not re.fullmatch(r"https?://[^/\s:]+(:\d{1,5})?", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an origin; write it as https://example.com[:port], with no path"
        )
    return text


SERVED_DEMO_PAUSE = 1.0
"""Seconds the demo model takes per call when served: the chat shows "Read a file" meanwhile."""


def _assistant(args: argparse.Namespace) -> Assistant:
    """The assistant `serve` and `worker` run: APP's, else the demo assistant (`read_file`
    in --root); either way with the tools of the MCP servers named."""
    assistant = _app_or_demo(args)
    if getattr(args, "resume_after_crash", False):
        assistant = dataclasses.replace(assistant, resume_after_crash=True)
    return assistant


def _app_or_demo(args: argparse.Namespace) -> Assistant:
    servers = mcp_servers(args)
    if args.app is None:
        return demo_assistant(args.root if args.root is not None else DEMO_ROOT, servers)
    if args.root is not None:
        raise ConfigError("--root is the demo assistant's folder; an APP brings its own tools")
    assistant = load(args.app, args.app_dir)
    if servers:
        assistant = dataclasses.replace(assistant, tools=[*assistant.tools, *servers])
    return assistant


def _provider(args: argparse.Namespace, assistant: Assistant) -> Provider:
    """The model `serve` and `worker` use: --provider and --model over the assistant's own,
    over the environment's rule (docs/design.md §6); --no-prompt-cache over its prompt_cache."""
    if getattr(args, "no_prompt_cache", False):
        assistant = dataclasses.replace(assistant, prompt_cache=False)
    with _missing_sdk_too():
        return assistant.choose_provider(
            os.environ, provider=args.provider, model=args.model, demo_pause=SERVED_DEMO_PAUSE
        )


def _settings(args: argparse.Namespace) -> Any:
    from .server import Settings
    from .store import DEFAULT_URL, parse_url

    database = args.database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
    parse_url(database)
    return Settings(
        database=database,
        host=getattr(args, "host", "127.0.0.1"),
        port=getattr(args, "port", 8000),
        worker=not getattr(args, "no_worker", False),
        concurrency=args.concurrency,
        lease=args.lease,
        metrics_port=getattr(args, "metrics_port", None),
        log_format=args.log_format,
        grace=args.grace,
        app=args.app,
        root=(args.root if args.root is not None else DEMO_ROOT).resolve(),
        mcp=[*args.mcp_stdio, *args.mcp_http],
        cors_origins=tuple(getattr(args, "cors_origin", ())),
        frame_ancestors=tuple(getattr(args, "frame_ancestors", ())),
        public_metrics=getattr(args, "public_metrics", False),
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from .server import serve

    logs.configure(args.log_format)
    redact_logs()
    use_prices(args)
    settings = _settings(args)
    assistant = _assistant(args)
    provider = _provider(args, assistant)
    gc_policy.apply()
    asyncio.run(serve(settings, assistant, provider))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from .server import work

    logs.configure(args.log_format)
    redact_logs()
    use_prices(args)
    settings = _settings(args)
    assistant = _assistant(args)
    provider = _provider(args, assistant)
    gc_policy.apply()
    asyncio.run(work(settings, assistant, provider))
    return 0


COMMANDS = {
    "demo": cmd_demo,
    "run": cmd_run,
    "replay": cmd_replay,
    "trace": cmd_trace,
    "serve": cmd_serve,
    "worker": cmd_worker,
}
