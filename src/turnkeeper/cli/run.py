"""`demo` and `run`: one turn on the terminal, its text as it arrives."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import i18n
from ..assistant import Assistant
from ..budget import DEFAULT_DEADLINE, DEFAULT_MAX_ITERATIONS, Budget
from ..cards import Card
from ..credentials import redact_text
from ..errors import ConfigError, MissingExtra
from ..observe.report import Report
from ..outcomes import Outcome
from ..providers import Provider
from ..providers.demo import DemoProvider, Where
from ..providers.scripted import ScriptedProvider
from ..providers.select import NAMES, ModelSettings, choose_provider
from ..state import PublishedState
from ..tools import CombinedToolset, Toolset
from ..tools.files import read_file_tool
from ..tools.functions import FunctionToolset
from ..turn.hooks import LocalHooks
from ..turn.loop import TurnResult, run_turn
from ..turn.trace import write_trace
from .options import (
    add_dev_pace_option,
    add_mcp_options,
    add_price_option,
    add_prompt_cache_option,
    directory,
    mcp_servers,
    positive_int,
    seconds,
    use_prices,
)
from .progress import LiveHooks, LiveLine

DEMO_QUESTION = "what's on my todo list?"
PROVIDER_HELP = (
    "a real model (keys from the environment; no default), or dev: an offline model that "
    "calls each tool with sample input"
)


SDKS = {"ANTHROPIC_API_KEY": "anthropic", "OPENAI_API_KEY": "openai"}

EXIT_CODES: dict[Outcome, int] = {
    Outcome.FINISHED: 0,
    Outcome.FAILED: 1,
    Outcome.ITERATION_LIMIT: 1,
    Outcome.TIME_LIMIT: 1,
    Outcome.STOPPED: 1,
    Outcome.LIMIT_REACHED: 1,
    Outcome.TRUNCATED: 3,
    Outcome.REFUSED: 3,
    Outcome.CONTEXT_EXCEEDED: 3,
}
"""`run`'s exit status by the turn's outcome: 0 it finished, 1 it failed or hit a cap, 3 the
model's answer was cut off, refused or out of context (2 is an unusable argument)."""

RUN_EPILOG = """exit status:
  0  the turn finished
  1  the turn failed or ended early: failed, iteration_limit, time_limit, stopped, limit_reached
  2  unusable arguments or input (one line on stderr)
  3  the model gave no full answer: truncated, refused, context_exceeded"""


def exit_code(outcome: Outcome | None) -> int:
    """The exit status of `run` for a turn that ended with `outcome` (`EXIT_CODES`); None, a
    turn left waiting for a person's decision, did not finish: 1."""
    return 1 if outcome is None else EXIT_CODES[outcome]


def _add_run_command(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="run one turn and print it",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("question", help="what to ask")
    model = run.add_mutually_exclusive_group()
    model.add_argument(
        "--script",
        type=Path,
        metavar="FILE",
        help="a JSON array of Messages API response bodies (examples/responses.json)",
    )
    model.add_argument("--provider", choices=NAMES, help=PROVIDER_HELP)
    run.add_argument(
        "--model", help="the model name, with --provider (default: the provider's own)"
    )
    add_dev_pace_option(run)
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


def cmd_demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="turnkeeper-demo-") as root:
        Path(root, "todo.txt").write_text("write tests", encoding="utf-8")
        result = _run(DEMO_QUESTION, DemoProvider(where=Where.RUN), root, Budget())
    print(result.state.messages[-1].text or "")
    return exit_code(result.outcome)


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
    if line is not None:
        line.asked = args.question
    result = _run(args.question, provider, args.root, budget, mcp_servers(args), line)
    if args.trace is not None:
        write_trace(result.trace, args.trace)
    if isinstance(provider, ScriptedProvider) and provider.unused:
        unused = i18n.counted(provider.unused, "scripted response")
        print(f"turnkeeper: note: {unused} unused", file=sys.stderr)
    if args.json:
        print(json.dumps(result.state.to_json(), ensure_ascii=False))
    else:
        messages = result.state.to_json()["messages"]
        print(transcript(messages, locale, _printed(result.state, line)))
    if line is not None:
        print(line.outcome(result.state.status))
    return exit_code(result.outcome)


def _printed(state: PublishedState, line: LiveLine | None) -> set[str]:
    """The messages the live line printed as they arrived: not printed again."""
    if line is None:
        return set()
    asked = {m.id for m in state.messages[:1] if m.role == "user" and line.asked_shown}
    return line.streamed | asked


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
        return choose_provider(
            args.provider,
            args.model,
            os.environ,
            demo_where=Where.RUN,
            settings=settings,
            dev_pace=args.dev_pace,
        )


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


def _stderr_report(report: Report) -> None:
    """The CLI's reporter: one line on stderr per report (the logger would repeat it)."""
    print(f"turnkeeper: {report.event}: {redact_text(report.message)}", file=sys.stderr)


def _check_writable(path: Path) -> None:
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as e:
        raise ConfigError(f"cannot write trace {path}: {e.strerror}") from e


def transcript(
    messages: Sequence[dict[str, Any]],
    locale: str,
    shown: Collection[str] = (),
    *,
    name: str = Assistant.name,
) -> str:
    """The conversation as a person reads it, the assistant's lines labelled with its `name`
    (as the widget labels them; default: the demo assistant's), notices resolved in `locale`,
    a card as its plain text (`Card.as_text()`); without the messages `shown` already, as
    they arrived."""
    you, bot = i18n.resolve("ui.you", locale), name
    lines = []
    for m in messages:
        if m.get("id") in shown:
            continue
        text = m.get("text")
        if m.get("card") is not None:
            text = Card.from_json(m["card"]).as_text()
        elif text is None:
            text = i18n.resolve(str(m.get("key")), locale)
        if text is not None:
            lines.append(f"{you if m.get('role') == 'user' else bot}: {text}")
    return "\n".join(lines)
