"""`serve` and `worker`: the command line's side of the processes `serving` builds."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
from collections.abc import Callable, Coroutine
from typing import Any

from ..assistant import Assistant, demo_assistant
from ..credentials import redact_logs
from ..errors import ConfigError, require_extra
from ..observe import logs
from ..observe.logs import FORMATS
from ..providers import Provider
from ..providers.demo import Where
from ..providers.select import NAMES
from ..service import gc_policy
from ..tools.files import DEMO_ROOT
from .loading import load
from .options import (
    add_dev_pace_option,
    add_mcp_options,
    add_price_option,
    add_prompt_cache_option,
    add_unclaimed_options,
    directory,
    header_name,
    mcp_servers,
    origin,
    port,
    positive_int,
    seconds,
    use_prices,
)
from .run import (
    _missing_sdk_too,
)

APP_HELP = (
    "your assistant: a turnkeeper.Assistant as module:attribute, imported from the current "
    "folder (or --app-dir); without it, the demo assistant"
)

SERVED_DEMO_PAUSE = 1.0
PROVIDER_HELP = "env TURNKEEPER_PROVIDER; dev: offline, calls each tool of the assistant in turn"

SERVER_MODULES = ("uvicorn", "starlette", "prometheus_client")
"""What `serve` imports of the server extra (the SDKs in it are checked when chosen)."""
POSTGRES_MODULES = ("psycopg", "psycopg_pool", "procrastinate", "prometheus_client")
"""What `worker` imports of the postgres extra."""


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
    _origin_options(serve)
    serve.add_argument(
        "--frame-ancestors",
        type=origin,
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of this origin frame the chat (repeatable; default: only its own)",
    )
    serve.add_argument(
        "--keep-alive",
        type=positive_int,
        metavar="SECONDS",
        help="seconds an idle connection is kept open: longer than the idle timeout of any "
        "load balancer or proxy in front (default 120)",
    )
    _stream_options(serve)
    _metrics_options(serve)
    serve.add_argument(
        "--public-metrics",
        action="store_true",
        help="answer /metrics on the public port too (no token needed)",
    )
    worker = commands.add_parser("worker", help="run queued turns from PostgreSQL")
    _serving_options(worker)
    _metrics_options(worker)


def _origin_options(serve: argparse.ArgumentParser) -> None:
    """Who may call the API from other origins (api/headers.py's `Cors`)."""
    serve.add_argument(
        "--cors-origin",
        type=origin,
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of this origin (https://example.com) call the API (repeatable)",
    )
    serve.add_argument(
        "--cors-header",
        type=header_name,
        action="append",
        default=[],
        metavar="NAME",
        help="let those pages send this header of your application's own, such as x-user"
        " (repeatable)",
    )
    serve.add_argument(
        "--cors-credentials",
        action="store_true",
        help="let those pages send cookies and HTTP authentication (needs --cors-origin)",
    )


def _stream_options(serve: argparse.ArgumentParser) -> None:
    """How many event streams are open at once (api/admission.py)."""
    serve.add_argument(
        "--max-streams",
        type=positive_int,
        metavar="N",
        help="event streams open at once; one more is 503 (default 2000)",
    )
    serve.add_argument(
        "--max-streams-per-user",
        type=positive_int,
        metavar="N",
        help="event streams one user (or conversation token) has open at once; one more is"
        " 429 (default 20)",
    )


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
        help="sqlite:///path.db or postgresql://USER@HOST:5432/DBNAME "
        "(env TURNKEEPER_DATABASE_URL; default sqlite:///turnkeeper.db)",
    )
    parser.add_argument("--provider", choices=NAMES, help=PROVIDER_HELP)
    parser.add_argument("--model", help="env TURNKEEPER_MODEL")
    add_dev_pace_option(parser)
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
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=4,
        metavar="N",
        help="turns this process runs at once (default: 4)",
    )
    parser.add_argument(
        "--lease", type=seconds, default=30.0, help="seconds a turn's lease lasts (default 30)"
    )
    add_unclaimed_options(parser)
    parser.add_argument(
        "--grace",
        type=seconds,
        default=10.0,
        help="on SIGINT or SIGTERM, seconds running turns get to finish (default 10)",
    )
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default="text",
        help="text lines or JSON lines (default: text)",
    )
    add_price_option(parser)


def _assistant(args: argparse.Namespace) -> Assistant:
    """The assistant `serve` and `worker` run: APP's, else the demo assistant (`read_file`
    in --root); either way with the tools of the MCP servers named."""
    assistant = _app_or_demo(args)
    if getattr(args, "resume_after_crash", False):
        assistant = dataclasses.replace(assistant, resume_after_crash=True)
    for name in ("unclaimed_after", "unclaimed_timeout"):  # its sweeper's, and its turns'
        if getattr(args, name, None) is not None:
            assistant = dataclasses.replace(assistant, **{name: getattr(args, name)})
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
            os.environ,
            provider=args.provider,
            model=args.model,
            demo_pause=SERVED_DEMO_PAUSE,
            demo_where=Where(args.command),
            dev_pace=args.dev_pace,
        )


def _settings(args: argparse.Namespace) -> Any:
    from ..serving.settings import KEEP_ALIVE, MAX_STREAMS, MAX_STREAMS_PER_USER, Settings
    from ..store import DEFAULT_URL, parse_url

    database = args.database or os.environ.get("TURNKEEPER_DATABASE_URL") or DEFAULT_URL
    parse_url(database)
    if getattr(args, "cors_credentials", False) and not getattr(args, "cors_origin", ()):
        raise ConfigError(
            "--cors-credentials needs --cors-origin ORIGIN: whose pages may send them"
        )
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
        cors_credentials=getattr(args, "cors_credentials", False),
        cors_headers=tuple(getattr(args, "cors_header", ())),
        frame_ancestors=tuple(getattr(args, "frame_ancestors", ())),
        public_metrics=getattr(args, "public_metrics", False),
        keep_alive=getattr(args, "keep_alive", None) or KEEP_ALIVE,
        max_streams=getattr(args, "max_streams", None) or MAX_STREAMS,
        max_streams_per_user=getattr(args, "max_streams_per_user", None) or MAX_STREAMS_PER_USER,
    )


def cmd_serve(args: argparse.Namespace) -> int:
    require_extra("turnkeeper serve", "server", SERVER_MODULES)
    from ..serving.server import serve

    return _process(args, serve)


def cmd_worker(args: argparse.Namespace) -> int:
    require_extra("turnkeeper worker", "postgres", POSTGRES_MODULES)
    from ..serving.server import work

    return _process(args, work)


def _process(args: argparse.Namespace, run: Callable[..., Coroutine[Any, Any, None]]) -> int:
    """What `serve` and `worker` share: logs, redaction, prices, the assistant and its
    provider, the GC policy; then `run` until the process stops."""
    logs.configure(args.log_format)
    redact_logs()
    use_prices(args)
    settings = _settings(args)
    assistant = _assistant(args)
    provider = _provider(args, assistant)
    gc_policy.apply()
    asyncio.run(run(settings, assistant, provider))
    return 0
