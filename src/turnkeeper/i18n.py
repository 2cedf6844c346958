"""Message catalogs: one JSON file per shipped locale, shared by the widget and the CLI.

The job never translates; the layer that knows the reader's locale resolves
keys here. A locale is a BCP 47 tag (`en`, `fr`, `pt-BR`); a key missing from
its catalog falls back along the tag (`pt-BR` → `pt`) and then to `en`; an
unknown key resolves to None (shows nothing).

`Catalogs` is one set of catalogs: the shipped ones (`en`, `es`) and whatever
an application adds (an `Assistant`'s `messages` and `captions`, in any
language). `negotiate()` picks the best of them for what a reader asked for.
The module-level functions use the process's own catalogs, which
`add_messages` extends (the CLI and `activity.captions` use them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources

from .errors import ConfigError

SHIPPED = ("en", "es")
"""The locales whose catalogs ship with turnkeeper."""
DEFAULT = "en"

_TAG = re.compile(
    r"(?P<language>[a-z]{2,3})"
    r"(?:-(?P<script>[a-z]{4}))?"
    r"(?:-(?P<region>[a-z]{2}|\d{3}))?",
    re.IGNORECASE,
)
"""A BCP 47 language tag of the forms catalogs use: language, optional script and region."""


def locale_tag(text: object) -> str:
    """`text` as a canonical BCP 47 tag (`pt-br` → `pt-BR`, `zh_hant` → `zh-Hant`);
    `ConfigError` if it is not one."""
    match = _TAG.fullmatch(text.replace("_", "-")) if isinstance(text, str) else None
    if match is None:
        raise ConfigError(
            f"{text!r} is not a locale tag; write one as BCP 47 does: en, fr, pt-BR, zh-Hant"
        )
    parts = [match["language"].lower()]
    if match["script"]:
        parts.append(match["script"].title())
    if match["region"]:
        parts.append(match["region"].upper())
    return "-".join(parts)


def shorter(locale: str) -> list[str]:
    """The tag and its shorter forms, longest first: `zh-Hant-TW`, `zh-Hant`, `zh`."""
    parts = locale.split("-")
    return ["-".join(parts[:n]) for n in range(len(parts), 0, -1)]


def fallbacks(locale: str) -> list[str]:
    """The tags a key is looked up under, best first: `pt-BR` → `pt-BR`, `pt`, `en`."""
    chain = shorter(locale)
    return chain if DEFAULT in chain else [*chain, DEFAULT]


def ask_key(tool: str) -> str:
    """The message key of a tool's ask text, in the imperative ("Delete a note"): what the
    approval card says the assistant wants to do. A catalog without it says
    `ui.approval_unknown` ("Run {tool}?") instead."""
    return f"ask.{tool}"


Texts = dict[str, str]
"""Texts by locale."""
KINDS = frozenset({"done", "ask"})


def caption_texts(tool: str, entry: object) -> tuple[str | Texts | None, Texts]:
    """A tool's `captions` entry as its past-tense texts by locale (or an existing
    `activity.*` key to reuse) and its ask texts by locale. An entry is a key, `{locale:
    text}` (the past tense only), `{locale: {"done": text, "ask": text}}`, or `{"done":
    {locale: text}, "ask": {locale: text}}`; `ConfigError` for any other shape, or for
    texts without `en` (English readers, and every locale without its own, would see
    none)."""
    if isinstance(entry, str):
        return entry, {}
    if not isinstance(entry, Mapping) or not entry:
        raise ConfigError(f"the caption of {tool!r} must be {{locale: text}} or an activity key")
    done: Texts = {}
    ask: Texts = {}
    if set(entry) <= KINDS:
        done, ask = (
            _by_locale(tool, entry.get("done") or {}),
            _by_locale(tool, entry.get("ask") or {}),
        )
    else:
        for locale, text in entry.items():
            kinds = text if isinstance(text, Mapping) else {"done": text}
            if not isinstance(kinds, Mapping) or not set(kinds) <= KINDS:
                raise ConfigError(
                    f"the caption of {tool!r} in {locale!r} must be a text or "
                    '{"done": text, "ask": text}'
                )
            done |= {locale: kinds["done"]} if "done" in kinds else {}
            ask |= {locale: kinds["ask"]} if "ask" in kinds else {}
    for what, texts in (("caption", done), ("ask text", ask)):
        if texts and DEFAULT not in texts:
            raise ConfigError(f"the {what} of {tool!r} needs an 'en' text (it has {sorted(texts)})")
    return done or None, ask


def _by_locale(tool: str, texts: object) -> Texts:
    if isinstance(texts, str):  # one text: English
        return {DEFAULT: texts}
    if not isinstance(texts, Mapping):
        raise ConfigError(f"the caption of {tool!r} must give {{locale: text}} for done and ask")
    return dict(texts)


class Catalogs:
    """The shipped catalogs with an application's entries over them, per locale."""

    def __init__(self, added: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._added: dict[str, dict[str, str]] = {}
        self._merged: dict[str, dict[str, str]] = {}
        for locale, messages in (added or {}).items():
            self.add(locale, messages)

    @property
    def locales(self) -> tuple[str, ...]:
        """Every locale with a catalog, `en` first, then in alphabetical order."""
        rest = sorted((set(SHIPPED) | set(self._added)) - {DEFAULT})
        return (DEFAULT, *rest)

    def add(self, locale: str, messages: Mapping[str, str]) -> None:
        """Add entries to the catalog of `locale` (any BCP 47 tag); `ConfigError` for a
        malformed tag, or an entry without a key or text."""
        tag = locale_tag(locale)
        if not isinstance(messages, Mapping):
            raise ConfigError(f"the messages of {tag!r} must be a mapping of keys to texts")
        for key, text in messages.items():
            if not (isinstance(key, str) and isinstance(text, str) and key and text.strip()):
                raise ConfigError(
                    f"catalog entry {key!r} of {tag!r} needs a non-empty key and text"
                )
        self._added.setdefault(tag, {}).update(messages)
        self._merged.clear()

    def catalog(self, locale: str) -> Mapping[str, str]:
        """Every key's text for a reader of `locale`: its own entries over its fallbacks'."""
        found = self._merged.get(locale)
        if found is None:
            found = {}
            for tag in reversed(fallbacks(locale)):
                found.update(_shipped(tag))
                found.update(self._added.get(tag, {}))
            self._merged[locale] = found
        return found

    def resolve(self, key: str, locale: str) -> str | None:
        """The text of `key` for a reader of `locale`, falling back along the tag and then to
        `en`; None for an unknown key."""
        return self.catalog(locale).get(key)

    def missing(self, locale: str) -> list[str]:
        """The keys English has that `locale` and its shorter forms lack (its readers see
        them in English), sorted; none for `en` itself."""
        own: set[str] = set()
        for tag in shorter(locale):
            if tag != DEFAULT:
                own |= set(_shipped(tag)) | set(self._added.get(tag, {}))
        return [] if locale == DEFAULT else sorted(set(self.catalog(DEFAULT)) - own)

    def negotiate(self, wanted: Iterable[str]) -> str:
        """The best locale with a catalog for a reader who wants `wanted`, best first
        (`navigator.languages`, an Accept-Language header's tags): each tag, then its
        shorter forms (`pt-BR` → `pt`); `en` when none has a catalog. Malformed tags are
        passed over."""
        known = {tag.lower(): tag for tag in self.locales}
        for text in wanted:
            try:
                tag = locale_tag(text.strip())
            except ConfigError:
                continue
            for candidate in shorter(tag):
                if candidate.lower() in known:
                    return known[candidate.lower()]
        return DEFAULT


@cache
def _shipped(locale: str) -> Mapping[str, str]:
    """A shipped catalog's entries; empty for a locale that ships none."""
    if locale not in SHIPPED:
        return {}
    text = resources.files("turnkeeper").joinpath("locales", f"{locale}.json").read_text("utf-8")
    data: dict[str, str] = json.loads(text)
    return data


def keys() -> Mapping[str, str]:
    """Every key turnkeeper ships, with its English text: the keys a catalog may hold (an
    application's captions add `activity.<tool>` keys of its own)."""
    return _shipped(DEFAULT)


def markdown() -> str:
    """Every shipped key and its English text, as a Markdown table: the block
    `scripts/keys.py` writes into docs/design.md §7 (a test holds the document to it)."""
    lines = ["| key | English |", "|---|---|"]
    for key, text in sorted(keys().items()):
        lines.append(f"| `{key}` | {text.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


PROCESS = Catalogs()
"""The process's own catalogs: what the CLI resolves keys from."""


def catalog(locale: str) -> Mapping[str, str]:
    """The process's catalog of `locale`, merged over its fallbacks."""
    return PROCESS.catalog(locale)


def add_messages(locale: str, messages: Mapping[str, str]) -> None:
    """Add entries to the process's catalog of `locale` (any BCP 47 tag)."""
    PROCESS.add(locale, messages)


def resolve(key: str, locale: str) -> str | None:
    """The text of `key` in `locale` from the process's catalogs, falling back along the tag and
    then to `en`; None for an unknown key."""
    return PROCESS.resolve(key, locale)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, plural unless the count is one: "1 iteration", "2 iterations"."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def accepted(header: str) -> list[str]:
    """The tags of an Accept-Language header, most wanted first (`*` and malformed
    weights are passed over)."""
    ranked: list[tuple[float, int, str]] = []
    for n, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                continue
        if tag and tag != "*" and weight > 0:
            ranked.append((-weight, n, tag.strip()))
    return [tag for _, _, tag in sorted(ranked)]


def locale_from_env(env: Mapping[str, str], catalogs: Catalogs | None = None) -> str:
    """The CLI's locale: the first non-empty of LC_ALL, LC_MESSAGES, LANG
    (`fr_FR.UTF-8` asks for `fr-FR`), negotiated against `catalogs`."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            wanted = [value.partition(".")[0].partition("@")[0]]
            return (catalogs or PROCESS).negotiate(wanted)
    return DEFAULT
