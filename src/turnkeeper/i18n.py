"""Message catalogs: one JSON file per locale, shared by the widget and the CLI.

The job never translates; the layer that knows the reader's locale resolves
keys here. A key missing from a catalog falls back to `en`; an unknown key
resolves to None (shows nothing).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources

LOCALES = ("en", "es")
DEFAULT = "en"


@cache
def catalog(locale: str) -> Mapping[str, str]:
    """The catalog of `locale` (one of LOCALES), merged over `en`."""
    if locale not in LOCALES:
        locale = DEFAULT
    base = _load(DEFAULT)
    return base if locale == DEFAULT else {**base, **_load(locale)}


def _load(locale: str) -> dict[str, str]:
    text = resources.files("turnkeeper").joinpath("locales", f"{locale}.json").read_text("utf-8")
    data: dict[str, str] = json.loads(text)
    return data


def resolve(key: str, locale: str) -> str | None:
    return catalog(locale).get(key)


def locale_from_env(env: Mapping[str, str]) -> str:
    """The first non-empty of LC_ALL, LC_MESSAGES, LANG, by language prefix."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "es" if value.lower().startswith("es") else DEFAULT
    return DEFAULT
