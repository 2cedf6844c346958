"""Credentials, hidden before anything is written, logged, printed or traced.

A base URL or database URL may carry a user and password
(`http://user:secret@host`) or a key in its query (`?api-key=…`). Traces, logs,
reports, error messages and banners show such a URL through `redact_url`, and
free text that may quote one (an error page, an exception) through
`redact_text`. This is the one place that knows what a credential looks like.

A server may also echo a credential outside any URL: an error body that quotes
the request's `x-api-key` or `Authorization` header. So the secrets this
process was configured with are kept here (`keep_secret`, `keep_url_secrets`:
the providers' API keys and base URLs, the database URL, MCP servers' headers),
and `redact_text` hides each of them, and any `Authorization: …` or
`x-api-key: …` value, wherever it appears.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

HIDDEN = "***"

MIN_SECRET = 6
"""A kept secret shorter than this is not looked for in free text (it would hide words);
in a URL it is still hidden by its place."""

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
_SECRET_NAME = re.compile(r"key|token|secret|password|passwd|pwd|signature|sig|auth", re.I)
_CONNINFO_PASSWORD = re.compile(r"\b(password\s*=\s*)('[^']*'|\S+)", re.I)
_CREDENTIAL_HEADER = re.compile(
    r"\b((?:proxy-)?authorization|x-api-key|api-key)(\s*[\"']?\s*[:=]\s*[\"']?\s*)"
    r"((?:bearer|basic|token)\s+)?+(?!\*\*\*|%2A%2A%2A)([^\s\"',;}&]+)",
    re.I,
)
"""A credential header's value as an error message may quote it (a URL's query value
that is already hidden is left as it is: redacting twice changes nothing)."""
_HEADER_NAMES = ("authorization", "api-key")

_kept: set[str] = set()
_keeping = threading.Lock()
_kept_longest_first: tuple[str, ...] = ()
"""The kept secrets, longest first (one that contains another is hidden whole); replaced,
never changed in place, so a thread redacting while another keeps a secret reads either."""
kept_any = False
"""Whether any secret is kept: read before each reply and tool result is searched (a flag,
so a turn with nothing to hide pays not even a call)."""


def redact_url(url: str) -> str:
    """The URL with its password and any secret-looking query values replaced by `***`."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a malformed port raises ValueError
    except ValueError:
        return _userinfo_hidden(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:{HIDDEN}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_NAME.search(name) for name, _ in pairs):
            query = urlencode([(n, HIDDEN if _SECRET_NAME.search(n) else v) for n, v in pairs])
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return parts._replace(netloc=netloc, query=query).geturl()


def redact_text(text: str) -> str:
    """The text with every URL in it redacted, any libpq `password=…`, `Authorization: …` or
    `x-api-key: …` value hidden, and every secret kept with `keep_secret` hidden."""
    for secret in _kept_longest_first:
        if secret in text:
            text = text.replace(secret, HIDDEN)
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    lowered = text.lower()
    if "password" in lowered:
        text = _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + HIDDEN, text)
    if any(name in lowered for name in _HEADER_NAMES):
        text = _CREDENTIAL_HEADER.sub(_header_hidden, text)
    return text


def redact_value(value: Any) -> Any:
    """`value` with every text in it redacted, however deep (JSON-like data)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def hide_secrets(value: Any) -> Any:
    """`value` with every exact kept secret in its strings replaced by `***`, and nothing
    else changed: what a model said or a tool returned keeps its structure, its blocks and
    every other character (a pattern that merely looks like a credential stays: it may be
    the answer). The same value (not a copy) when it holds no kept secret."""
    if not _kept_longest_first:
        return value
    if isinstance(value, str):
        return _hidden(value)
    if isinstance(value, dict):
        hidden = {k: hide_secrets(v) for k, v in value.items()}
        return value if all(hidden[k] is v for k, v in value.items()) else hidden
    if isinstance(value, list):
        items = [hide_secrets(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _hidden(text: str) -> str:
    for secret in _kept_longest_first:
        if secret in text:
            text = text.replace(secret, HIDDEN)
    return text


class SecretStream:
    """Text that arrives in pieces (a streamed answer), passed on with the kept secrets
    hidden, even one split across pieces: an end of the text so far that begins a kept
    secret is held back until the next piece shows whether it is one, or `end()`. Text
    that begins none (nearly all of it) passes at once."""

    def __init__(self) -> None:
        self.held = ""

    def feed(self, piece: str) -> str:
        """The part of the text so far that can be passed on now, secrets hidden."""
        text = _hidden(self.held + piece)
        cut = _secret_begins(text)
        self.held = text[cut:]
        return text[:cut]

    def end(self) -> str:
        """What was held back, once no more text comes."""
        held, self.held = _hidden(self.held), ""
        return held


def _secret_begins(text: str) -> int:
    """The first place from which the rest of `text` begins a kept secret (the length of
    `text` if none: all of it may be passed on)."""
    secrets = _kept_longest_first
    if not secrets:
        return len(text)
    for i in range(max(len(text) - len(secrets[0]) + 1, 0), len(text)):
        tail = text[i:]
        if any(s.startswith(tail) for s in secrets):
            return i
    return len(text)


def keep_secret(*values: str | None) -> None:
    """Hide these values (API keys, passwords, tokens) in every text redacted from now on."""
    global _kept_longest_first, kept_any
    with _keeping:  # two threads keeping at once: neither's secret is lost
        fresh = {v for v in values if v and len(v) >= MIN_SECRET} - _kept
        if fresh:
            _kept.update(fresh)
            _kept_longest_first = tuple(sorted(_kept, key=len, reverse=True))
            kept_any = True


def keep_url_secrets(url: str | None) -> None:
    """Keep the secrets a URL carries: its password, its user-info as HTTP Basic sends it
    (`Authorization: Basic …`), and its secret-looking query values."""
    if not url:
        return
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return
    if password is not None:
        user = unquote(parts.username or "")
        basic = base64.b64encode(f"{user}:{unquote(password)}".encode()).decode()
        keep_secret(password, unquote(password), basic)
    keep_secret(*(v for n, v in parse_qsl(parts.query) if _SECRET_NAME.search(n)))


def keep_header_secrets(headers: Iterable[tuple[str, str]]) -> None:
    """Keep the values of credential headers (`Authorization`, `x-api-key`, …), and the
    token after an `Authorization` value's scheme."""
    for name, value in headers:
        if _SECRET_NAME.search(name):
            keep_secret(value, value.partition(" ")[2].strip())


def _header_hidden(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{m.group(3) or ''}{HIDDEN}"


def _userinfo_hidden(url: str) -> str:
    """A URL too malformed to parse: hide everything between `//` and the last `@`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = f"{HIDDEN}@{authority.rpartition('@')[2]}"
    return f"{scheme}{sep}{authority}{slash}{path}"


class RedactingFilter(logging.Filter):
    """A handler filter: the record's message and traceback with credentials redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


def redact_logger(name: str) -> None:
    """Redact what the named logger itself records (an SDK's or HTTP client's, which log
    request URLs at INFO and DEBUG), whoever handles it."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())


def redact_logs(handlers: list[logging.Handler] | None = None) -> None:
    """Add the redacting filter to the handlers (by default the root logger's)."""
    for handler in logging.getLogger().handlers if handlers is None else handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
