"""Message catalogs: one JSON file per locale, shared by the widget and the CLI.

The job never translates; the layer that knows the reader's locale resolves
keys here. A key missing from a catalog falls back to `en`; an unknown key
resolves to None (shows nothing). An application adds its own entries (the
captions of its own tools, see `activity.captions`) with `add_messages`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources

from .errors import ConfigError

LOCALES = ("en", "es")
DEFAULT = "en"

_added: dict[str, dict[str, str]] = {}
"""Entries the application added, per locale, over the shipped catalogs."""


@cache
def catalog(locale: str) -> Mapping[str, str]:
    """The catalog of `locale` (one of LOCALES), merged over `en`."""
    if locale not in LOCALES:
        locale = DEFAULT
    base = {**_load(DEFAULT), **_added.get(DEFAULT, {})}
    if locale == DEFAULT:
        return base
    return {**base, **_load(locale), **_added.get(locale, {})}


def add_messages(locale: str, messages: Mapping[str, str]) -> None:
    """Add entries to the catalog of `locale` in this process; `ConfigError` for other locales."""
    if locale not in LOCALES:
        raise ConfigError(f"unknown locale {locale!r}; catalogs exist for {', '.join(LOCALES)}")
    for key, text in messages.items():
        if not (isinstance(key, str) and isinstance(text, str) and key and text.strip()):
            raise ConfigError(f"catalog entry {key!r} needs a non-empty key and text")
    _added.setdefault(locale, {}).update(messages)
    catalog.cache_clear()


def _load(locale: str) -> dict[str, str]:
    text = resources.files("turnkeeper").joinpath("locales", f"{locale}.json").read_text("utf-8")
    data: dict[str, str] = json.loads(text)
    return data


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, plural unless the count is one: "1 iteration", "2 iterations"."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def resolve(key: str, locale: str) -> str | None:
    return catalog(locale).get(key)


def locale_from_env(env: Mapping[str, str]) -> str:
    """The first non-empty of LC_ALL, LC_MESSAGES, LANG, by language prefix."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "es" if value.lower().startswith("es") else DEFAULT
    return DEFAULT
