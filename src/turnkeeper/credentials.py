"""Credentials in URLs, hidden before anything is written or logged.

A base URL or database URL may carry a user and password
(`http://user:secret@host`) or a key in its query (`?api-key=…`). Traces, logs,
reports, error messages and banners show such a URL through `redact_url`, and
free text that may quote one (an error page, an exception) through
`redact_text`. This is the one place that knows what a credential looks like.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, urlencode, urlsplit

HIDDEN = "***"

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
_SECRET_NAME = re.compile(r"key|token|secret|password|passwd|pwd|signature|sig|auth", re.I)
_CONNINFO_PASSWORD = re.compile(r"\b(password\s*=\s*)('[^']*'|\S+)", re.I)


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
    """The text with every URL in it redacted, and any libpq `password=…` hidden."""
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    if "password" in text.lower():
        text = _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + HIDDEN, text)
    return text


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
