"""The command line's shared option types and options (prices, prompt cache, MCP servers)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import NoReturn

from ..observe import prices
from ..tools import Toolset


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
    from ..tools.mcp import toolsets_from

    return list(toolsets_from(args.mcp_stdio, args.mcp_http))


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


def words_per_second(text: str) -> float:
    """A pace: a positive decimal number of words a second."""
    if not re.fullmatch(r"\d+(\.\d*)?|\.\d+", text.strip()) or float(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of words a second")
    return float(text)


def add_dev_pace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dev-pace",
        type=words_per_second,
        metavar="WORDS_PER_SECOND",
        help="how fast the dev model (and a served demo) streams its answer "
        "(env TURNKEEPER_DEV_PACE; default 30)",
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


def header_name(text: str) -> str:
    """An HTTP request header's name (RFC 9110 token), as `--cors-header` allows it."""
    if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an HTTP header name, such as x-user")
    return text.lower()


def add_unclaimed_options(parser: argparse.ArgumentParser) -> None:
    """`--unclaimed-after` and `--unclaimed-timeout` (`serve`, `worker`): over the
    assistant's own, for the turns this process queues and its sweeper."""
    parser.add_argument(
        "--unclaimed-after",
        type=seconds,
        metavar="SECONDS",
        help="a queued turn no worker claimed this long says it waits for one (default: the"
        " assistant's unclaimed_after, 60)",
    )
    parser.add_argument(
        "--unclaimed-timeout",
        type=seconds,
        metavar="SECONDS",
        help="a queued turn no worker claimed this long ends failed (default: the assistant's"
        " unclaimed_timeout, 600)",
    )
