"""`turnkeeper messages`: a locale's catalog to translate, as an assistant's `messages`
take it (docs/design.md §7).

    turnkeeper messages --locale fr [APP] [--app-dir DIR] [--missing]

Prints one JSON object: every key the assistant's readers may see (turnkeeper's own, and
the `activity.<tool>` keys of its captions), each with the locale's own text where it has
one and the English text where it has none; `--missing` prints only the latter. Without
`APP`, turnkeeper's own keys.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..i18n import DEFAULT, Catalogs, locale_tag
from .options import directory


def add_messages_command(commands: Any) -> None:
    messages = commands.add_parser(
        "messages", help="a locale's catalog to translate: every key with its text, as JSON"
    )
    messages.add_argument(
        "app", nargs="?", metavar="APP", help="the assistant (module:attribute): its captions too"
    )
    messages.add_argument(
        "--locale", required=True, metavar="TAG", help="the locale to translate (fr, pt-BR)"
    )
    messages.add_argument(
        "--missing",
        action="store_true",
        help="only the keys the locale lacks (its readers see them in English)",
    )
    messages.add_argument(
        "--app-dir", type=directory, metavar="DIR", help="import APP from this folder"
    )


def cmd_messages(args: argparse.Namespace) -> int:
    tag = locale_tag(args.locale)
    catalogs = Catalogs() if args.app is None else _catalogs(args)
    print(json.dumps(to_translate(catalogs, tag, args.missing), ensure_ascii=False, indent=2))
    return 0


def to_translate(catalogs: Catalogs, tag: str, missing: bool = False) -> dict[str, str]:
    """Every key English has, sorted, with `tag`'s text (English where it has none); with
    `missing`, only the keys `tag` lacks."""
    lacking = set(catalogs.missing(tag))
    texts = catalogs.catalog(tag)
    return {
        key: texts[key]
        for key in sorted(catalogs.catalog(DEFAULT))
        if not missing or key in lacking
    }


def _catalogs(args: argparse.Namespace) -> Catalogs:
    from .loading import load

    return load(args.app, args.app_dir).catalogs
